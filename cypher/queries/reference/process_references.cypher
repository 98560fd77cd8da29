MATCH (p:Process {id: $id})
OPTIONAL MATCH (c:Conversation)-[:DEFAULT_PROCESS]->(p)
WITH p, count(c) AS conversations
OPTIONAL MATCH (a:Alternative)-[:EXECUTED_BY]->(p)
WITH p, conversations, count(a) AS alternatives
OPTIONAL MATCH (st:ProcessStep)-[:CALLS_PROCESS]->(p)
WHERE NOT st.versionId STARTS WITH ($id + '@')
RETURN conversations, alternatives, count(st) AS callers
