// Failed tool calls per Tool since $since (an RFC 3339 time, e.g. an hour ago): attempts that
// failed for good and attempts that were retried. A step run is its calls' audit record:
// `failedAt` (indexed, set only by a failure) is its latest failed attempt, `retriedAt` lists
// its retried ones. Its Tool: INVOKES_TOOL where chosen at run time, else its step's.
MATCH (sr:StepRun)
WHERE sr.failedAt >= $since
OPTIONAL MATCH (sr)-[:INVOKES_TOOL]->(ran:Tool)
OPTIONAL MATCH (sr)-[:OF_STEP]->(:ProcessStep)-[:CALLS_TOOL]->(named:Tool)
WITH sr, coalesce(ran, named) AS t
WHERE t IS NOT NULL
WITH t, sr,
     CASE WHEN sr.status = 'failed' AND sr.finishedAt >= $since THEN 1 ELSE 0 END AS failed,
     size([at IN coalesce(sr.retriedAt, []) WHERE at >= $since]) AS retried
RETURN t.id AS toolId, t.name AS tool, sum(failed) AS failed, sum(retried) AS retried,
       count(DISTINCT sr.runId) AS runs
ORDER BY failed + retried DESC, toolId
