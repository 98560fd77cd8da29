// AGT-10: a Process's top-level runs not settled yet ($open: every run status but the settled
// ones), for maxConcurrent.
MATCH (r:Run {processId: $processId})
WHERE r.depth = 1 AND r.status IN $open
RETURN count(r) AS n
