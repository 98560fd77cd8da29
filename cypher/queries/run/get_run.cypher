// The Run, under its write lock: a read of a run is one commit's state by construction.
// Every commit that changes a run's record (the engine's pass, a cancel request) writes the
// Run node, so it holds that lock until the commit has been applied whole; a no-op SET takes
// the same lock and changes nothing (the reader's transaction is rolled back). Its StepRuns
// are read next, in the same transaction (run/step_runs.cypher), before the lock is released.
MATCH (r:Run {id: $id})
SET r.ownerId = r.ownerId
RETURN r {.*} AS run
