MATCH (:Process {id: $processId})-[:HAS_VERSION]->(v:ProcessVersion)
RETURN v.number AS number, v.doc AS doc, v.createdAt AS createdAt
ORDER BY v.number
