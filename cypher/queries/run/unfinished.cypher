MATCH (r:Run)
WHERE r.status IN ['queued', 'running', 'waiting_for_approval']
RETURN r.id AS id, r.status AS status, coalesce(r.cancelRequested, false) AS cancelRequested
