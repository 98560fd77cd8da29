UNWIND $links AS l
MATCH (sr:StepRun {id: l.stepRunId}), (w:Worker {id: l.workerId})
MERGE (sr)-[:RAN_ON]->(w)
RETURN count(*) AS n
