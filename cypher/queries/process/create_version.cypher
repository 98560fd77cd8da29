MATCH (p:Process {id: $processId})
CREATE (p)-[:HAS_VERSION]->(v:ProcessVersion {id: $versionId, processId: $processId, number: $number, doc: $doc, createdAt: $now})
RETURN v.id AS id
