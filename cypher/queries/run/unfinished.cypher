MATCH (r:Run)
WHERE r.status IN ['queued', 'running']
RETURN r.id AS id, coalesce(r.cancelRequested, false) AS cancelRequested
