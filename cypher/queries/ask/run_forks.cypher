// The forks of run $runId, generations deep: each fork, the step it ran anew from, and the steps
// that took a recorded output instead of calling their Tool (REUSED_FROM), nearest first.
MATCH path = (f:Run)-[:FORKED_FROM*1..20]->(:Run {id: $runId})
WITH f, length(path) AS generation, head(relationships(path)).atStep AS atStep
OPTIONAL MATCH (f)-[:HAS_STEP_RUN]->(s:StepRun)-[:REUSED_FROM]->(:StepRun)
WITH f, generation, atStep, s ORDER BY s.stepId
RETURN f.id AS forkId, generation, atStep, f.status AS status, collect(s.stepId) AS reusedSteps
ORDER BY generation, forkId
