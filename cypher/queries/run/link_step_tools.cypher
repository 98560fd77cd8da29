MATCH (r:Run {id: $runId})-[:HAS_STEP_RUN]->(sr:StepRun)-[:OF_STEP]->(:ProcessStep)-[:CALLS_TOOL]->(t:Tool)
CREATE (sr)-[:INVOKES_TOOL]->(t)
RETURN count(*) AS n
