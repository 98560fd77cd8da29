// The run a claim started (GRAPH-2 style: the edge beside the id property) and the Process it
// runs (the settings' at the start: a retry follows a changed setting).
MATCH (k:UpkeepClaim {key: $key}), (r:Run {id: $runId})
SET k.runId = $runId, k.processId = $processId
MERGE (k)-[:STARTED_RUN]->(r)
RETURN k.id AS id
