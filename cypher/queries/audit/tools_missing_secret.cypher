MATCH (t:Tool)-[:USES_SERVICE]->(s:Service)
WHERE s.requiresSecret = true AND NOT EXISTS { MATCH (t)-[:USES_SECRET]->(:Secret) }
RETURN t.id AS id
