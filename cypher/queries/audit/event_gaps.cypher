// Settled runs whose event log is not exactly 1..eventSeq (chunks plus pre-chunk RunEvents).
// A chunk not hung off its Run (HAS_EVENTS) is not counted, so its run is reported too.
MATCH (r:Run)
WHERE r.status IN ['completed', 'failed', 'canceled']
OPTIONAL MATCH (e:RunEvent {runId: r.id})
WITH r, count(e) AS single, max(e.seq) AS singleLast
OPTIONAL MATCH (r)-[:HAS_EVENTS]->(c:RunEventChunk)
WITH r, single, singleLast, sum(c.lastSeq - c.firstSeq + 1) AS chunked, max(c.lastSeq) AS chunkLast
WITH r, single + chunked AS events,
     CASE WHEN chunkLast IS NULL OR (singleLast IS NOT NULL AND singleLast > chunkLast)
          THEN singleLast ELSE chunkLast END AS last
WHERE events <> r.eventSeq OR coalesce(last, 0) <> r.eventSeq
RETURN r.id AS id
