// The Run alone. Its StepRuns are read by the next statement (run/step_runs.cypher), never
// in this one: Neo4j reads are read-committed, so a statement reading both could see the
// Run of an engine commit and StepRuns from before it (a completed run whose step still
// runs). Read in this order, a settled Run's StepRuns are its final ones.
MATCH (r:Run {id: $id})
RETURN r {.*} AS run
