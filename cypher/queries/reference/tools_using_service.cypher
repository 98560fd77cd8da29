MATCH (t:Tool)-[:USES_SERVICE]->(:Service {id: $id})
RETURN count(t) AS n
