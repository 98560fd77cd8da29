UNWIND $workers AS w
MERGE (n:Worker {id: w.id})
SET n += w.set
RETURN count(n) AS n
