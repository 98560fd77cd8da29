// What a new Turn needs to decide where it attaches: the Conversation and (when named) the
// parent Turn with its Alternatives' selection and lifecycle.
// Grouped by the nodes, their properties read once after: Neo4j reads are read-committed, and
// a grouping key read per row (a turn count another request bumps) could split the group.
MATCH (c:Conversation {id: $conversationId})
OPTIONAL MATCH (t:ConversationTurn {id: coalesce($turnId, '')})-[h:HAS_ALTERNATIVE]->(a:Alternative)
WITH c, t, collect(CASE WHEN a IS NULL THEN null
                   ELSE {id: a.id, isActive: h.isActive, state: a.state} END) AS alternatives
RETURN c.ownerId AS ownerId, c.status AS status, c.turnCount AS turnCount,
       t.id AS turnId, t.conversationId AS turnConversationId, t.speaker AS speaker,
       t.sequence AS sequence, t.parentTurnId AS parentTurnId, alternatives
