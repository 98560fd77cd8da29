// Runs not settled ($open: every run status but the settled ones), for recovery and durable
// cancel requests.
MATCH (r:Run)
WHERE r.status IN $open
RETURN r.id AS id, r.status AS status, coalesce(r.cancelRequested, false) AS cancelRequested
