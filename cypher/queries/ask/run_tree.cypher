// A run and every run it started, depth first: which step of which run spawned each child.
MATCH path = (root:Run {id: $runId})-[:HAS_STEP_RUN|SPAWNED*0..20]->(r:Run)
WITH r, [n IN nodes(path) WHERE n:StepRun] AS via
RETURN r.id AS runId, r.processId AS processId, r.processVersion AS version, r.status AS status,
       size(via) AS depth, CASE WHEN size(via) = 0 THEN null ELSE last(via).stepId END AS spawnedBy
ORDER BY depth, runId
