// The Run alone. Its StepRuns are read by the next statement (run/step_runs.cypher), never
// in this one: a statement reading both groups them under `r {.*}` read row by row, and a
// commit landing meanwhile splits it into two rows, each with part of the steps. A commit can
// still be seen in part across the two statements; runs::get reads a torn settled run again.
MATCH (r:Run {id: $id})
RETURN r {.*} AS run
