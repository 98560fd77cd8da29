// A Run's StepRuns in step order, read under the Run's lock (run/get_run.cypher says why).
MATCH (:Run {id: $id})-[:HAS_STEP_RUN]->(sr:StepRun)
WITH sr ORDER BY sr.order
RETURN collect(sr {.*}) AS steps
