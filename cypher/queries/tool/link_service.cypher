MATCH (t:Tool {id: $toolId}), (s:Service {id: $serviceId})
CREATE (t)-[:USES_SERVICE {connectionParams: $connectionParams, createdAt: $now}]->(s)
RETURN t.id AS id
