MATCH (r:Run)-[:HAS_STEP_RUN]->(sr:StepRun)
WHERE r.status IN ['completed', 'failed', 'canceled']
  AND NOT sr.status IN ['completed', 'failed', 'skipped', 'canceled']
RETURN DISTINCT r.id AS id
