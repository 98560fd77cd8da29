// TURN-2: exactly one active Alternative. The Turn is written first so concurrent switches and
// additions on it serialize; then every HAS_ALTERNATIVE edge is set in one pass.
MATCH (t:ConversationTurn {id: $turnId})
SET t.lockedAt = $now
WITH t
MATCH (t)-[h:HAS_ALTERNATIVE]->(x:Alternative)
SET h.isActive = (x.id = $alternativeId)
WITH t, sum(CASE WHEN x.id = $alternativeId THEN 1 ELSE 0 END) AS hits
MATCH (c:Conversation {id: t.conversationId})
SET c.currentTurnId = t.id, c.currentAlternativeId = $alternativeId, c.updatedAt = $now
RETURN hits
