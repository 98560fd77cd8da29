// Deletes warm-up records (crates/graph/src/warm/passes.rs): the runs and definitions named in $ids,
// and those left before $before by a warm-up that did not finish (its process was killed).
CALL {
  MATCH (r:WarmUpRun)
  WHERE r.id IN $ids OR r.createdAt < $before
  OPTIONAL MATCH (r)-[:HAS_STEP_RUN]->(sr:WarmUpStepRun)
  DETACH DELETE r, sr
}
CALL {
  MATCH (n:WarmUpProcess|WarmUpProcessVersion|WarmUpProcessStep|WarmUpUser|WarmUpWorker)
  WHERE n.id IN $ids OR n.warmUpAt < $before
  DETACH DELETE n
}
