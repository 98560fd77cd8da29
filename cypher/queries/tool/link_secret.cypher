MATCH (t:Tool {id: $toolId}), (s:Secret {id: $secretId})
CREATE (t)-[:USES_SECRET {scope: $scope, createdAt: $now}]->(s)
RETURN t.id AS id
