UNWIND $events AS e
CREATE (:RunEvent {key: e.key, runId: e.runId, seq: e.seq, kind: e.kind, stepId: e.stepId,
                   at: e.at, data: e.data})
RETURN count(*) AS n
