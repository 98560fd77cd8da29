// One engine pass in one statement: new step runs, step-run changes (with the Worker that finished each
// attempt, one CREATEd edge per attempt: a MERGE would scan the Worker's ever-growing edge list),
// then run changes with their new events (the pass's events, one JSON array, appended to the
// Run's `events` list and their first and last sequence numbers to `eventRanges`: the log costs
// no record of its own). `WITH count(*)` joins the parts and yields one row even when a part has
// no rows. A tool step's StepRun is its calls' audit record (the lean journal): it is written
// when the step settles, and a retried attempt's facts are appended to it. A run that generates
// an agent Alternative settles it in the same statement: content written once, from
// `generating` only, and its content is recorded for Graphiti ingestion (IngestItem, the
// outbox) with it.
// Every lookup by a key that may be null goes through coalesce(key, ''), so that a null key
// is an index seek that finds nothing, never a label scan. Status words are parameters from the
// domain's enums: a new Run is $queued, a new StepRun $stepPending; $settled, $completed (run),
// $generating, $valid, $failed (Alternative), $pending (binding) and $new (outbox item).
// Last, runs started in this pass are linked to their ProcessVersion, User, ProcessSteps and
// Tools (run/create_run.cypher says why that is not done at creation).
// The parts come in one map, $batch (runs::apply says why: one plan for every mix of parts).
// First the Runs handed to the engine to create (the API of the instance holding the engine
// lease hands a start over instead of writing it, so the engine is the one writer of runs),
// each only if its Process is still at the plan's revision, enabled and on its version
// (run/create_run.cypher's rule); the RETURN says which were made, and the engine undoes a pass
// that missed one.
UNWIND $batch.newRuns AS nr
MATCH (p:Process {id: nr.processId})-[:HAS_VERSION]->(v:ProcessVersion {id: nr.versionId})
WHERE nr.expectedRevision IS NULL
   OR (p.revision = nr.expectedRevision AND p.enabled = true AND p.version = v.number)
CREATE (made:Run {id: nr.id, processId: nr.processId, processVersion: nr.processVersion,
              versionId: nr.versionId, status: $queued, depth: nr.depth,
              parentRunId: nr.parentRunId, parentStepRunId: nr.parentStepRunId,
              ownerId: nr.ownerId, inputs: nr.inputs, plan: nr.plan, eventSeq: 0, version: 0,
              createdAt: nr.createdAt, alternativeId: nr.alternativeId,
              triggerKind: nr.triggerKind, triggerSubjectId: nr.triggerSubjectId, linked: false,
              stepRuns: nr.stepRuns, ownerBudgetMicros: nr.ownerBudgetMicros,
              forkedFrom: nr.forkedFrom, forkStep: nr.forkStep, reuse: nr.reuse})
WITH made, nr
// A fork (FORK-1) names its original, as run/create_run.cypher does.
OPTIONAL MATCH (original:Run {id: coalesce(nr.forkedFrom, '')})
FOREACH (_ IN CASE WHEN original IS NULL THEN [] ELSE [1] END |
  CREATE (made)-[:FORKED_FROM {atStep: nr.forkStep}]->(original))
WITH count(*) AS runsMade
// Then the StepRuns of runs written for the first time (run/create_run.cypher says why the
// engine creates them).
UNWIND $batch.stepRuns AS n
MATCH (run:Run {id: n.runId})
CREATE (run)-[:HAS_STEP_RUN {order: n.order}]->(:StepRun {id: n.id, runId: n.runId,
        stepId: n.stepId, processStepId: n.processStepId, status: $stepPending, attempts: 0,
        order: n.order, runVersion: n.runVersion})
WITH count(*) AS created
UNWIND $batch.steps AS s
MATCH (sr:StepRun {id: s.id})
SET sr += s.set
FOREACH (wid IN s.workers | MERGE (w:Worker {id: wid}) CREATE (sr)-[:RAN_ON]->(w))
// GRAPH-4: a worker that went silent holding an attempt keeps a LOST_ON edge from that step run.
FOREACH (l IN s.lost | MERGE (w:Worker {id: l.workerId})
  CREATE (sr)-[:LOST_ON {attempt: l.attempt, at: l.at}]->(w))
// A retried attempt: when it failed, how long it took (float: a stored list has one type) and
// its whole record (attempt, worker, input hash, error) as JSON.
FOREACH (x IN s.retries |
  SET sr.retriedAt = coalesce(sr.retriedAt, []) + x.at,
      sr.retriedMs = coalesce(sr.retriedMs, []) + toFloat(coalesce(x.durationMs, 0)),
      sr.retryLog = coalesce(sr.retryLog, []) + x.log)
// GRAPH-3: an agent step's pipeline record (AGT-16) hangs off its step run.
FOREACH (a IN s.audits |
  CREATE (sr)-[:HAS_AUDIT]->(:ToolCallAudit {id: a.id, runId: a.runId, stepRunId: a.stepRunId, toolId: a.toolId,
                          actor: a.actor, inputHash: a.inputHash, status: a.status,
                          durationMs: a.durationMs, attempt: a.attempt, at: a.at,
                          kind: a.kind, pipeline: a.pipeline}))
WITH count(*) AS stepRows
UNWIND $batch.runs AS r
MATCH (x:Run {id: r.id})
SET x += r.set
FOREACH (e IN CASE WHEN r.events IS NULL THEN [] ELSE [r.events] END |
  SET x.events = coalesce(x.events, []) + e.text,
      x.eventRanges = coalesce(x.eventRanges, []) + e.range)
WITH stepRows, x
OPTIONAL MATCH (al:Alternative {id: coalesce(x.alternativeId, '')})
WITH stepRows, x, al,
     al IS NOT NULL AND al.state = $generating AND x.status IN $settled AS settles
WITH stepRows, x, al, settles,
     settles AND x.status = $completed AND trim(coalesce(x.outputText, '')) <> '' AS ingests
FOREACH (_ IN CASE WHEN settles THEN [1] ELSE [] END |
  SET al.state = CASE WHEN x.status = $completed THEN $valid ELSE $failed END,
      al.content = CASE WHEN x.status = $completed THEN x.outputText ELSE null END,
      al.error = CASE WHEN x.status = $completed THEN null ELSE x.error END,
      al.settledAt = x.finishedAt,
      al.binding = CASE WHEN ingests THEN $pending ELSE null END)
// EPI-3: the settled content is recorded for ingestion in this same transaction (the outbox).
FOREACH (_ IN CASE WHEN ingests THEN [1] ELSE [] END |
  CREATE (:IngestItem {id: 'message:' + al.id, kind: 'message', targetId: al.id,
                       conversationId: al.conversationId, state: $new, createdAt: x.finishedAt}))
WITH stepRows, count(*) AS runRows
// Runs started in this pass get their edges into the definitions and to their caller. A static
// step's Tool is reached through OF_STEP->CALLS_TOOL: no edge of its own.
UNWIND $batch.links AS runId
MATCH (r:Run {id: runId})
MATCH (v:ProcessVersion {id: r.versionId})
MATCH (u:User {id: r.ownerId})
CREATE (r)-[:RUN_OF]->(v)
CREATE (r)-[:STARTED_BY]->(u)
SET r.linked = true
WITH r
MATCH (r)-[:HAS_STEP_RUN]->(sr:StepRun)
MATCH (ps:ProcessStep {id: sr.processStepId})
CREATE (sr)-[:OF_STEP]->(ps)
WITH count(*) AS linked
// A static step that ran on the caller's own Tool of its Tool's template names it.
UNWIND $batch.invokes AS iv
MATCH (sr:StepRun {id: iv.stepRunId})
MATCH (t:Tool {id: iv.toolId})
CREATE (sr)-[:INVOKES_TOOL]->(t)
WITH count(*) AS invoked
// FORK-1: each StepRun of a fork that took its original's recorded output points at the
// original StepRun it came from; `aiden check` audits that it has exactly one, of the same step
// and input hash (audit/fork_reuse.cypher).
UNWIND $batch.reused AS ru
MATCH (sr:StepRun {id: ru.stepRunId})
MATCH (o:StepRun {id: ru.from})
CREATE (sr)-[:REUSED_FROM]->(o)
WITH count(*) AS linkedReuse
UNWIND $batch.newRuns AS nr
OPTIONAL MATCH (m:Run {id: nr.id})
WITH collect(m.id) AS made
// With its COMMIT in the same flush ($unmadeFails, runs::apply_and_commit), a handed run not
// made fails the statement (a division by zero: Cypher has no assertion), so the server
// ignores the COMMIT and the engine redoes the pass in a transaction that reads `made` first.
WHERE CASE WHEN $unmadeFails AND size(made) < size($batch.newRuns) THEN 1 / $zero = 0
           ELSE true END
RETURN made
