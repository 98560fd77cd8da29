MATCH (t:Tool {id: $toolId})-[r:USES_SECRET]->(:Secret)
DELETE r
