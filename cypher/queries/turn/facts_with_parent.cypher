// What a new Alternative or a switch needs: the Turn with its Alternatives, its Conversation,
// and its parent Turn with the parent's Alternatives. Both Turns are written first (their
// locks, the Turn before its parent, as every writer of a Turn's flags writes it first): their
// active flags are then read whole, never halfway through a switch (TURN-2), since reads are
// read-committed. Grouped by the nodes, their properties read once after.
MATCH (t:ConversationTurn {id: $turnId})
OPTIONAL MATCH (p:ConversationTurn {id: coalesce(t.parentTurnId, '')})
SET t.lockedAt = toString(datetime.transaction())
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END |
  SET p.lockedAt = toString(datetime.transaction()))
WITH t, p
MATCH (t)-[h:HAS_ALTERNATIVE]->(a:Alternative)
WITH t, p, collect({id: a.id, isActive: h.isActive, state: a.state}) AS alternatives
MATCH (c:Conversation {id: t.conversationId})
OPTIONAL MATCH (p)-[ph:HAS_ALTERNATIVE]->(pa:Alternative)
WITH c, t, alternatives, p,
     collect(CASE WHEN pa IS NULL THEN null
             ELSE {id: pa.id, isActive: ph.isActive, state: pa.state} END) AS parentAlternatives
RETURN c.ownerId AS ownerId, c.status AS status, c.id AS conversationId,
       t.id AS turnId, t.speaker AS speaker, t.sequence AS sequence,
       t.parentTurnId AS parentTurnId, alternatives,
       p.id AS parentId, p.conversationId AS parentConversationId, p.speaker AS parentSpeaker,
       p.sequence AS parentSequence, p.parentTurnId AS parentParentTurnId, parentAlternatives
