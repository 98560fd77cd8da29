// AGT-10: a Process's top-level runs not settled yet (maxConcurrent).
MATCH (r:Run {processId: $processId})
WHERE r.depth = 1 AND r.status IN ['queued', 'running', 'waiting_for_approval']
RETURN count(r) AS n
