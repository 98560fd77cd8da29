MATCH (:Process {id: $processId})-[:HAS_VERSION]->(v:ProcessVersion)
DETACH DELETE v
