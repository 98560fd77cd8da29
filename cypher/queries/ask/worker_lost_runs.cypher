// Which runs Worker $workerId held when it died: step attempts it went silent on (LOST_ON),
// with what became of them after they were dispatched again.
MATCH (w:Worker {id: $workerId})<-[l:LOST_ON]-(sr:StepRun)<-[:HAS_STEP_RUN]-(r:Run)
RETURN r.id AS runId, sr.stepId AS stepId, l.attempt AS attempt, l.at AS lostAt,
       sr.status AS stepStatus, sr.workerId AS finishedOn, r.status AS runStatus
ORDER BY lostAt, runId, stepId
