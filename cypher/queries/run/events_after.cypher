// The run's event chunks that hold events after $after, in order (each `events` is a JSON
// array of {seq, kind, stepId, at, data}).
MATCH (c:RunEventChunk)
WHERE c.runId = $runId AND c.lastSeq > $after
RETURN c.firstSeq AS firstSeq, c.events AS events
ORDER BY c.firstSeq
LIMIT $limit
