// TURN-3: a child Turn has one CHILD_OF to a Turn of its Conversation and each of its
// Alternatives RESPONDS_TO exactly one Alternative of that parent; roots have neither.
MATCH (t:ConversationTurn)
OPTIONAL MATCH (t)-[:CHILD_OF]->(p:ConversationTurn)
WITH t, collect(p.id) AS parentIds, collect(p.conversationId) AS parentConvs
MATCH (t)-[:HAS_ALTERNATIVE]->(a:Alternative)
OPTIONAL MATCH (a)-[:RESPONDS_TO]->(r:Alternative)
OPTIONAL MATCH (pt:ConversationTurn)-[:HAS_ALTERNATIVE]->(r)
WITH t, parentIds, parentConvs, a, count(r) AS responds, collect(pt.id) AS targetTurns
WHERE size(parentIds) > 1
   OR (size(parentIds) = 0 AND responds > 0)
   OR (size(parentIds) = 1 AND (parentConvs <> [t.conversationId] OR responds <> 1
                                OR targetTurns <> parentIds))
RETURN DISTINCT t.id AS id
