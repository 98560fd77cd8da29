// What an event stream reads of its run in one go, under the Run's lock (run/get_run.cypher
// says why): who may see it, its status, how far its log is, and the parts of its log after
// $after (run/apply_batch.cypher says how the log is kept). So a settled head always comes
// with every event up to its last: a stream never waits for a log to become visible.
MATCH (r:Run {id: $runId})
SET r.ownerId = r.ownerId
WITH r, coalesce(r.events, []) AS log, coalesce(r.eventRanges, []) AS ranges
OPTIONAL MATCH (r)-[:HAS_EVENTS]->(c:RunEventChunk)
WHERE c.lastSeq > $after
WITH r, log, ranges, c
ORDER BY c.firstSeq
WITH r, log, ranges, collect(c.events)[..$limit] AS chunks
RETURN r.ownerId AS ownerId, r.status AS status, r.eventSeq AS eventSeq,
       r.processId AS processId,
       chunks + [i IN range(0, size(log) - 1) WHERE ranges[2 * i + 1] > $after | log[i]][..$limit]
       AS parts
