// Settled runs whose event log is not exactly 1..eventSeq: the Run's own log (`eventRanges`, a
// first and last sequence number per part of `events`), chunks of runs written before it
// (RunEventChunk, HAS_EVENTS) and pre-chunk RunEvents. A chunk not hung off its Run is not
// counted, so its run is reported too; so is a log whose parts and ranges differ in number.
MATCH (r:Run)
WHERE r.status IN $settled
OPTIONAL MATCH (e:RunEvent {runId: r.id})
WITH r, count(e) AS single, max(e.seq) AS singleLast
OPTIONAL MATCH (r)-[:HAS_EVENTS]->(c:RunEventChunk)
WITH r, single, singleLast, sum(c.lastSeq - c.firstSeq + 1) AS chunked, max(c.lastSeq) AS chunkLast
WITH r, single, singleLast, chunked, chunkLast, coalesce(r.eventRanges, []) AS g
WITH r, single + chunked
          + reduce(n = 0, i IN range(0, size(g) - 2, 2) | n + g[i + 1] - g[i] + 1) AS events,
     [x IN [singleLast, chunkLast, CASE WHEN size(g) > 0 THEN g[size(g) - 1] END]
      WHERE x IS NOT NULL] AS lasts,
     size(coalesce(r.events, [])) * 2 = size(g) AS paired
WITH r, events, reduce(m = 0, x IN lasts | CASE WHEN x > m THEN x ELSE m END) AS last, paired
WHERE events <> r.eventSeq OR last <> r.eventSeq OR NOT paired
RETURN r.id AS id
