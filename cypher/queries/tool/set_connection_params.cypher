MATCH (t:Tool {id: $toolId})-[r:USES_SERVICE]->(:Service)
SET r.connectionParams = $connectionParams
RETURN t.id AS id
