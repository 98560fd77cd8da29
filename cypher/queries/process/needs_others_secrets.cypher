// For each given Process: a Service whose Tool, reached through its current steps and its
// child Processes' current steps, uses a Secret of another user than the caller, where the
// caller has no Tool of their own of that Tool's template (docs/connections.md). Such a
// Process cannot run for the caller.
UNWIND $processIds AS processId
MATCH (p:Process {id: processId})
MATCH (p) (()-[:HAS_VERSION]->(:ProcessVersion)-[:HAS_STEP]->(:ProcessStep)-[:CALLS_PROCESS]->(:Process)){0,10} (q:Process)
MATCH (q)-[:HAS_VERSION]->(v:ProcessVersion)-[:HAS_STEP]->(:ProcessStep)-[:CALLS_TOOL]->(t:Tool)
WHERE v.number = q.version
MATCH (t)-[:USES_SECRET]->(sec:Secret)
WHERE sec.ownerId <> $callerId
  AND NOT EXISTS {
    MATCH (own:Tool {ownerId: $callerId})
    WHERE own.toolTemplateId = t.toolTemplateId AND own.enabled = true
  }
MATCH (t)-[:USES_SERVICE]->(s:Service)
WITH processId, collect(DISTINCT {service: s.name, serviceType: s.type}) AS needs
RETURN processId, needs
