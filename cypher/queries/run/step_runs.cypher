// A Run's StepRuns in step order, read after the Run itself (run/get_run.cypher says why).
MATCH (:Run {id: $id})-[:HAS_STEP_RUN]->(sr:StepRun)
WITH sr ORDER BY sr.order
RETURN collect(sr {.*}) AS steps
