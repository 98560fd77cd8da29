// The parts of a run's event log that hold events after $after, in order: each a JSON array of
// {seq, kind, stepId, at, data}. The log is the Run's `events` list (one array per engine pass,
// `eventRanges` holding each one's first and last sequence number); runs written before it keep
// their RunEventChunk nodes (HAS_EVENTS), read here too. $limit bounds the chunks read.
MATCH (r:Run {id: $runId})
WITH r, coalesce(r.events, []) AS log, coalesce(r.eventRanges, []) AS ranges
OPTIONAL MATCH (r)-[:HAS_EVENTS]->(c:RunEventChunk)
WHERE c.lastSeq > $after
WITH log, ranges, c
ORDER BY c.firstSeq
WITH log, ranges, collect(c.events)[..$limit] AS chunks
RETURN chunks + [i IN range(0, size(log) - 1) WHERE ranges[2 * i + 1] > $after | log[i]][..$limit]
       AS parts
