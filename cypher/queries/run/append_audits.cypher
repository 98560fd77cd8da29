UNWIND $audits AS a
CREATE (:ToolCallAudit {id: a.id, runId: a.runId, stepRunId: a.stepRunId, toolId: a.toolId,
                        actor: a.actor, inputHash: a.inputHash, status: a.status,
                        durationMs: a.durationMs, attempt: a.attempt, at: a.at})
RETURN count(*) AS n
