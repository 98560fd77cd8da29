MATCH (sr:StepRun {id: $id})
MATCH (r:Run {id: sr.runId})
RETURN sr.status AS status, r.status AS runStatus
