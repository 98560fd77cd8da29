MATCH (n:Worker)
RETURN n {.*} AS worker
ORDER BY n.type, n.id
