MATCH (t:Tool)-[:USES_SECRET]->(:Secret {id: $id})
RETURN count(t) AS n
