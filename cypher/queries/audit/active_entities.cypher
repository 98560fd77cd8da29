// ENT-2: a Conversation's active entities are visible to its owner: created by them, or
// extracted in one of their conversations (graphiti's `group_id`).
MATCH (c:Conversation)-[:HAS_ACTIVE_ENTITY]->(n:Entity)
WHERE coalesce(n.createdBy, '') <> c.ownerId
OPTIONAL MATCH (g:Conversation {id: coalesce(n.group_id, '')})
WITH c, n, g
WHERE g IS NULL OR g.ownerId <> c.ownerId
RETURN c.id + ' -> ' + n.uuid AS id
