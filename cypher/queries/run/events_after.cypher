// The run's event chunks that hold events after $after, in order (each `events` is a JSON
// array of {seq, kind, stepId, at, data}). Chunks are reached from their Run (HAS_EVENTS):
// they have no runId index (migration 0016).
MATCH (:Run {id: $runId})-[:HAS_EVENTS]->(c:RunEventChunk)
WHERE c.lastSeq > $after
RETURN c.firstSeq AS firstSeq, c.events AS events
ORDER BY c.firstSeq
LIMIT $limit
