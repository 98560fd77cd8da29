// Settled runs with their StepRuns, for a dry replay or a diff (FORK, REPLAY-1). Read without
// locks: a settled run's record no longer changes, and the statement keeps only runs whose
// status is in $settled. Without its event log: a fork, a replay and a diff read the plan,
// inputs and step records only, and a long run's log is most of its bytes; nor the StepRuns'
// audit-only fields (hops, telemetry, retries), which the record does not decode.
UNWIND $ids AS id
MATCH (r:Run {id: id})
WHERE r.status IN $settled
OPTIONAL MATCH (r)-[:HAS_STEP_RUN]->(sr:StepRun)
WITH r, sr ORDER BY sr.order
RETURN r {.*, events: null, eventRanges: null} AS run, collect(sr {.*, hops: null, telemetry: null, retriedAt: null, retriedMs: null,
                           retryLog: null}) AS steps
