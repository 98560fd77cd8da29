UNWIND $runs AS r
MATCH (x:Run {id: r.id})
SET x += r.set
RETURN count(x) AS n
