// A run's write version (docs/execution.md, "The run record"): every engine pass that changes a
// run increments the Run's `version` and stamps the StepRuns it writes with it (`runVersion`).
// Runs and StepRuns written before it start at 0.
MATCH (r:Run) WHERE r.version IS NULL
SET r.version = 0;
MATCH (sr:StepRun) WHERE sr.runVersion IS NULL
SET sr.runVersion = 0
