// A Turn with its first, active Alternative (TURN-8), attached under its parent (TURN-3) at
// depth = parent + 1 (TURN-1); the Conversation counts it and moves its current position.
// Agent Alternatives are EXECUTED_BY the Process version that generates them (TURN-5) and
// GENERATED_BY the Run that does (GRAPH-1; the Run is created earlier in the same transaction).
MATCH (c:Conversation {id: $conversationId})
SET c.turnCount = c.turnCount + 1, c.currentTurnId = $turnId,
    c.currentAlternativeId = $alternativeId, c.updatedAt = $now
CREATE (c)-[:HAS_TURN {sequence: $sequence}]->(t:ConversationTurn {
  id: $turnId, conversationId: $conversationId, speaker: $speaker, turnType: $turnType,
  sequence: $sequence, parentTurnId: $parentTurnId, viaAlternative: $parentAlternativeId,
  timestamp: $now, altCount: 1})
CREATE (t)-[:HAS_ALTERNATIVE {isActive: true, sequence: 1}]->(a:Alternative {
  id: $alternativeId, seqKey: $turnId + '#1', turnId: $turnId, conversationId: $conversationId,
  speaker: $speaker, turnType: $turnType, sequence: 1, depth: $sequence, content: $content, state: $state,
  runId: $runId, respondsTo: $parentAlternativeId, createdAt: $now,
  binding: CASE WHEN $content IS NULL THEN null ELSE $pending END})
// EPI-3: content to ingest is recorded in the transaction that makes it (the outbox).
FOREACH (_ IN CASE WHEN $content IS NULL THEN [] ELSE [1] END |
  CREATE (:IngestItem {id: 'message:' + $alternativeId, kind: 'message', targetId: $alternativeId,
                       conversationId: $conversationId, state: $new, createdAt: $now}))
WITH t, a
OPTIONAL MATCH (p:ConversationTurn {id: coalesce($parentTurnId, '')})
OPTIONAL MATCH (pa:Alternative {id: coalesce($parentAlternativeId, '')})
OPTIONAL MATCH (proc:Process {id: coalesce($processId, '')})
OPTIONAL MATCH (run:Run {id: coalesce($runId, '')})
// GRAPH-1: the run that generates an agent Alternative, as an edge beside the runId property.
FOREACH (_ IN CASE WHEN run IS NULL THEN [] ELSE [1] END | CREATE (a)-[:GENERATED_BY]->(run))
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END |
  CREATE (t)-[:CHILD_OF {viaAlternative: $parentAlternativeId}]->(p))
FOREACH (_ IN CASE WHEN pa IS NULL THEN [] ELSE [1] END | CREATE (a)-[:RESPONDS_TO]->(pa))
FOREACH (_ IN CASE WHEN proc IS NULL THEN [] ELSE [1] END |
  CREATE (a)-[:EXECUTED_BY {createdAt: $now, version: $processVersion, versionId: $processVersionId}]->(proc))
RETURN t.id AS id
