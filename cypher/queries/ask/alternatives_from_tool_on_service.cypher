// Which Alternatives came from runs that called Tool $toolId on Service $serviceId, and with
// which Process version? (Steps of child runs count: the walk follows SPAWNED.) A step run
// reaches its Tool through its step (OF_STEP->CALLS_TOOL), or through INVOKES_TOOL where the
// Tool was chosen at run time: an agent's call, or the caller's own Tool of the step's template.
MATCH (t:Tool {id: $toolId})-[:USES_SERVICE]->(s:Service {id: $serviceId})
CALL {
  WITH t
  MATCH (sr:StepRun)-[:INVOKES_TOOL]->(t)
  RETURN sr
  UNION
  WITH t
  MATCH (sr:StepRun)-[:OF_STEP]->(:ProcessStep)-[:CALLS_TOOL]->(t)
  WHERE NOT (sr)-[:INVOKES_TOOL]->(:Tool)
  RETURN sr
}
MATCH (a:Alternative)-[:GENERATED_BY]->(r:Run)-[:HAS_STEP_RUN|SPAWNED*1..10]->(sr)
MATCH (r)-[:RUN_OF]->(v:ProcessVersion)
RETURN DISTINCT a.id AS alternativeId, a.conversationId AS conversationId, r.id AS runId,
       v.processId AS processId, v.number AS version
ORDER BY alternativeId
