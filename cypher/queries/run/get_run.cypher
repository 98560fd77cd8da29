MATCH (r:Run {id: $id})
OPTIONAL MATCH (r)-[:HAS_STEP_RUN]->(sr:StepRun)
WITH r, sr ORDER BY sr.order
RETURN r {.*} AS run, collect(sr {.*}) AS steps
