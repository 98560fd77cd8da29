// What the upkeep loop needs of a Conversation: its owner and role, its overrides, and its
// counters (failed compressions wait until retryAt).
MATCH (c:Conversation {id: $id})
OPTIONAL MATCH (u:User {id: c.ownerId})
OPTIONAL MATCH (m:MemoryUpkeep {conversationId: c.id})
OPTIONAL MATCH (k:UpkeepClaim {key: 'compression:' + c.id})
RETURN c.id AS id, c.ownerId AS ownerId, u.role AS ownerRole,
       c.compressionTokenBudget AS compressionTokenBudget,
       c.compressionProcessId AS compressionProcessId,
       m.retryAt AS retryAt, coalesce(m.failures, 0) AS failures,
       coalesce(m.compressions, 0) AS compressions,
       coalesce(m.sinceIntrospection, 0) AS sinceIntrospection, k IS NOT NULL AS claimed
