MATCH (t:Tool {id: $toolId})-[u:USES_SERVICE]->(s:Service)
OPTIONAL MATCH (t)-[:USES_SECRET]->(sec:Secret)
RETURN t.doc AS toolDoc, s.doc AS serviceDoc, u.connectionParams AS connectionParams,
       sec.id AS secretId, sec.ownerId AS secretOwnerId, sec.encryptedValue AS ciphertext,
       t.revision AS toolRevision, s.revision AS serviceRevision, sec.revision AS secretRevision
