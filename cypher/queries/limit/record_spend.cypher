// AGT-14: the engine adds what a pass charged (estimates of calls it dispatched, corrections
// when a model turn reports its usage) to each run's daily windows, in the pass's own
// transaction. Only the engine (the lease holder) writes these nodes.
UNWIND $spend AS s
MERGE (w:SpendWindow {key: s.key})
ON CREATE SET w.scope = s.scope, w.subjectId = s.subjectId, w.day = s.day, w.spentMicros = 0
SET w.spentMicros = w.spentMicros + s.micros, w.updatedAt = $now
RETURN count(w) AS n
