MATCH (p:Process)-[:HAS_VERSION]->(v:ProcessVersion)-[:HAS_STEP]->(:ProcessStep)-[:CALLS_PROCESS]->(c:Process)
WHERE p.id IN $ids AND v.number = p.version
RETURN p.id AS id, collect(DISTINCT c.id) AS callees
