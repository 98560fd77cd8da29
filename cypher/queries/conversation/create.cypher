// A new Conversation with its owner (OWN-1) and, when given, its DEFAULT_PROCESS (CONV-2).
MATCH (u:User {id: $ownerId})
CREATE (c:Conversation {id: $id, ownerId: $ownerId, status: 'active', turnCount: 0, revision: 1,
                        createdAt: $now, updatedAt: $now})
SET c += $props
CREATE (c)-[:OWNED_BY {createdAt: $now}]->(u)
WITH c
OPTIONAL MATCH (p:Process {id: coalesce($defaultProcessId, '')})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END |
  CREATE (c)-[:DEFAULT_PROCESS {since: $now}]->(p))
RETURN c.id AS id
