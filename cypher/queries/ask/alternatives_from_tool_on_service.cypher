// Which Alternatives came from runs that called Tool $toolId on Service $serviceId, and with
// which Process version? (Steps of child runs count: the walk follows SPAWNED.)
MATCH (t:Tool {id: $toolId})-[:USES_SERVICE]->(s:Service {id: $serviceId})
MATCH (a:Alternative)-[:GENERATED_BY]->(r:Run)-[:HAS_STEP_RUN|SPAWNED*1..10]->(sr:StepRun)-[:INVOKES_TOOL]->(t)
MATCH (r)-[:RUN_OF]->(v:ProcessVersion)
RETURN DISTINCT a.id AS alternativeId, a.conversationId AS conversationId, r.id AS runId,
       v.processId AS processId, v.number AS version
ORDER BY alternativeId
