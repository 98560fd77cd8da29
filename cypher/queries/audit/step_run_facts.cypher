// EXEC-2 (the lean journal): a StepRun is the audit record of its tool calls. One
// that a worker's result settled ($resultStatuses) holds at least one attempt and its finish
// time, and its retried attempts' facts are whole: as many times, durations and records,
// `failedAt` set.
MATCH (sr:StepRun)
WHERE (sr.workerId IS NOT NULL AND sr.status IN $resultStatuses
       AND (coalesce(sr.attempts, 0) < 1 OR sr.finishedAt IS NULL))
   OR (sr.retriedAt IS NOT NULL
       AND (size(sr.retriedAt) <> size(coalesce(sr.retriedMs, []))
            OR size(sr.retriedAt) <> size(coalesce(sr.retryLog, []))
            OR sr.failedAt IS NULL))
RETURN sr.id AS id
