// What a new Alternative or a switch needs: the Turn with its Alternatives, its Conversation,
// and its parent Turn with the parent's Alternatives.
MATCH (t:ConversationTurn {id: $turnId})-[h:HAS_ALTERNATIVE]->(a:Alternative)
WITH t, collect({id: a.id, isActive: h.isActive, state: a.state}) AS alternatives
MATCH (c:Conversation {id: t.conversationId})
OPTIONAL MATCH (p:ConversationTurn {id: coalesce(t.parentTurnId, '')})-[ph:HAS_ALTERNATIVE]->(pa:Alternative)
// Grouped by the nodes (a property read per row could split the group under a concurrent
// commit: reads are read-committed), their properties read once after.
WITH c, t, alternatives, p,
     collect(CASE WHEN pa IS NULL THEN null
             ELSE {id: pa.id, isActive: ph.isActive, state: pa.state} END) AS parentAlternatives
RETURN c.ownerId AS ownerId, c.status AS status, c.id AS conversationId,
       t.id AS turnId, t.speaker AS speaker, t.sequence AS sequence,
       t.parentTurnId AS parentTurnId, alternatives,
       p.id AS parentId, p.conversationId AS parentConversationId, p.speaker AS parentSpeaker,
       p.sequence AS parentSequence, p.parentTurnId AS parentParentTurnId, parentAlternatives
