// What rotating or revoking Secret $secretId touches: the Tools that use it, their Service,
// and the enabled Processes whose current version calls them.
MATCH (sec:Secret {id: $secretId})<-[:USES_SECRET]-(t:Tool)-[:USES_SERVICE]->(s:Service)
OPTIONAL MATCH (p:Process)-[:HAS_VERSION]->(v:ProcessVersion)-[:HAS_STEP]->(:ProcessStep)-[:CALLS_TOOL]->(t)
  WHERE v.number = p.version AND p.enabled = true
RETURN t.id AS toolId, s.id AS serviceId, collect(DISTINCT p.id) AS processes
ORDER BY toolId
