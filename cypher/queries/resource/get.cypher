MATCH (n:__LABEL__ {id: $id})
RETURN n.doc AS doc
