// FORK-1: each StepRun of a fork that took its original's recorded output points at the
// original StepRun it came from (`REUSED_FROM`); `aiden check` audits that it has exactly one,
// of the same step and input hash (audit/fork_reuse.cypher).
UNWIND $rows AS row
MATCH (sr:StepRun {id: row.stepRunId})
MATCH (o:StepRun {id: row.from})
CREATE (sr)-[:REUSED_FROM]->(o)
