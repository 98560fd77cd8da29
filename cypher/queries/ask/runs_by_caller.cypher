// Who runs Process $processId and how their runs end: per caller and status, with the latest.
MATCH (:Process {id: $processId})-[:HAS_VERSION]->(:ProcessVersion)<-[:RUN_OF]-(r:Run)
MATCH (r)-[:STARTED_BY]->(u:User)
RETURN u.id AS userId, r.status AS status, count(r) AS runs, max(r.createdAt) AS latest
ORDER BY userId, status
