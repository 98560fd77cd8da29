MATCH (s:Service)
WHERE s.enabled = false AND s.status = 'healthy'
RETURN s.id AS id
