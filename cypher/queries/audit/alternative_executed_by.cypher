// TURN-5: agent Alternatives, and only they, have exactly one EXECUTED_BY.
MATCH (t:ConversationTurn)-[:HAS_ALTERNATIVE]->(a:Alternative)
OPTIONAL MATCH (a)-[:EXECUTED_BY]->(p:Process)
WITH t, a, count(p) AS n
WHERE (t.speaker = 'agent' AND n <> 1) OR (t.speaker <> 'agent' AND n <> 0)
RETURN a.id AS id
