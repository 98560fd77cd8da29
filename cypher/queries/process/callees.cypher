MATCH (p:Process)
WHERE p.id IN $ids
// The current version read once per Process (run/plan_source.cypher says why).
WITH p, p.version AS current
MATCH (p)-[:HAS_VERSION]->(v:ProcessVersion)-[:HAS_STEP]->(:ProcessStep)-[:CALLS_PROCESS]->(c:Process)
WHERE v.number = current
RETURN p.id AS id, collect(DISTINCT c.id) AS callees
