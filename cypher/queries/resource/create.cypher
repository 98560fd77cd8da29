MATCH (u:User {id: $ownerId})
CREATE (n:__LABEL__ {id: $id})
SET n += $props, n.doc = $doc
CREATE (n)-[:OWNED_BY {createdAt: $now}]->(u)
RETURN n.id AS id
