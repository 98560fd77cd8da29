MATCH (t:Tool)-[r:USES_SERVICE]->(s:Service)
RETURN t.id AS id, r.connectionParams AS connectionParams, s.doc AS service
