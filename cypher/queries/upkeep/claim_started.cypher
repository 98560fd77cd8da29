// The run a claim started (GRAPH-2 style: the edge beside the id property).
MATCH (k:UpkeepClaim {key: $key}), (r:Run {id: $runId})
SET k.runId = $runId
MERGE (k)-[:STARTED_RUN]->(r)
RETURN k.id AS id
