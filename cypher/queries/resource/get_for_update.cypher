// The current document, with the node's write lock taken (Neo4j holds it until the commit):
// concurrent updates of one resource wait for each other in turn, instead of all but one
// failing their revision check and retrying. Re-setting a label it has writes nothing.
MATCH (n:__LABEL__ {id: $id})
SET n:__LABEL__
RETURN n.doc AS doc
