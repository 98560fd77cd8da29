// The Tool's record and revision are read first, its edges after: reads are read-committed, so
// an update committed in between (a replaced Secret) shows as a newer revision than the one
// returned, and the worker's cached resolution is rebuilt at its next check.
MATCH (t:Tool {id: $toolId})
WITH t, t.doc AS toolDoc, t.revision AS toolRevision
MATCH (t)-[u:USES_SERVICE]->(s:Service)
OPTIONAL MATCH (t)-[:USES_SECRET]->(sec:Secret)
RETURN toolDoc, s.doc AS serviceDoc, u.connectionParams AS connectionParams,
       sec.id AS secretId, sec.ownerId AS secretOwnerId, sec.encryptedValue AS ciphertext,
       toolRevision, s.revision AS serviceRevision, sec.revision AS secretRevision
