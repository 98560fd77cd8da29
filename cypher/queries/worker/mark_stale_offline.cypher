MATCH (n:Worker)
WHERE n.status <> 'offline' AND n.lastHeartbeat < $cutoff
SET n.status = 'offline'
RETURN n.id AS id
