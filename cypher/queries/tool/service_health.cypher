// A Tool's health is its Service's: the Services of Tools $ids, with their last probe.
UNWIND $ids AS id
MATCH (t:Tool {id: id})-[:USES_SERVICE]->(s:Service)
RETURN t.id AS id, s.status AS status, s.lastHealthCheck AS lastHealthCheck,
       s.errorMessage AS errorMessage
