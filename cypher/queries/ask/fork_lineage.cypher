// The lineage of a fork back to its origin: each ancestor Conversation and the Turn and
// Alternative the fork was made from, nearest first.
MATCH path = (c:Conversation {id: $conversationId})-[:FORKED_FROM*0..50]->(o:Conversation)
WITH o, length(path) AS generation, relationships(path) AS hops
RETURN generation, o.id AS conversationId, o.title AS title,
       CASE WHEN generation = 0 THEN null ELSE last(hops).originTurn END AS forkedAtTurn,
       CASE WHEN generation = 0 THEN null ELSE last(hops).originAlternative END AS forkedAtAlternative
ORDER BY generation
