// What a new Turn needs to decide where it attaches: the Conversation and (when named) the
// parent Turn with its Alternatives' selection and lifecycle. The parent Turn is written first
// (its lock), as a switch or an addition on it writes it first: its active flags are then read
// whole, never halfway through a switch (TURN-2), since reads are read-committed. Grouped by the
// nodes, their properties read once after (a grouping key read per row could split the group).
MATCH (c:Conversation {id: $conversationId})
OPTIONAL MATCH (t:ConversationTurn {id: coalesce($turnId, '')})
FOREACH (_ IN CASE WHEN t IS NULL THEN [] ELSE [1] END |
  SET t.lockedAt = toString(datetime.transaction()))
WITH c, t
OPTIONAL MATCH (t)-[h:HAS_ALTERNATIVE]->(a:Alternative)
WITH c, t, collect(CASE WHEN a IS NULL THEN null
                   ELSE {id: a.id, isActive: h.isActive, state: a.state} END) AS alternatives
RETURN c.ownerId AS ownerId, c.status AS status, c.turnCount AS turnCount,
       t.id AS turnId, t.conversationId AS turnConversationId, t.speaker AS speaker,
       t.sequence AS sequence, t.parentTurnId AS parentTurnId, alternatives
