MATCH (n:__LABEL__ {id: $id})
WHERE n.revision = $expectedRevision
SET n += $props, n.doc = $doc
RETURN n.id AS id
