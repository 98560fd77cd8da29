// EXEC-5: a settled run ($settled) has no step that has not settled ($settledSteps).
MATCH (r:Run)-[:HAS_STEP_RUN]->(sr:StepRun)
WHERE r.status IN $settled
  AND NOT sr.status IN $settledSteps
RETURN DISTINCT r.id AS id
