MATCH (r:Run)
WHERE r.status IN ['completed', 'failed', 'canceled']
OPTIONAL MATCH (e:RunEvent {runId: r.id})
WITH r, count(e) AS events, max(e.seq) AS last
WHERE events <> r.eventSeq OR last <> r.eventSeq
RETURN r.id AS id
