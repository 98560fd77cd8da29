UNWIND $steps AS s
MATCH (sr:StepRun {id: s.id})
SET sr += s.set
RETURN count(sr) AS n
