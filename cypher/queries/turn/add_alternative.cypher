// Another Alternative of an existing Turn. The Turn is written first (taking its lock), so
// concurrent additions and switches on one Turn serialize:
// the sequence is the Turn's next, and the new Alternative is the only active one (TURN-2,
// TURN-8). `seqKey` is the unique backstop for the sequence.
MATCH (t:ConversationTurn {id: $turnId})
SET t.lockedAt = $now
WITH t
SET t.altCount = t.altCount + 1
WITH t
MATCH (t)-[h:HAS_ALTERNATIVE]->(:Alternative)
SET h.isActive = false
WITH DISTINCT t
CREATE (t)-[:HAS_ALTERNATIVE {isActive: true, sequence: t.altCount}]->(a:Alternative {
  id: $alternativeId, seqKey: t.id + '#' + toString(t.altCount), turnId: t.id,
  conversationId: t.conversationId, speaker: t.speaker, turnType: t.turnType,
  sequence: t.altCount, depth: t.sequence,
  content: $content, state: $state, runId: $runId, respondsTo: $parentAlternativeId,
  createdAt: $now, binding: CASE WHEN $content IS NULL THEN null ELSE $pending END})
// EPI-3: content to ingest is recorded in the transaction that makes it (the outbox).
FOREACH (_ IN CASE WHEN $content IS NULL THEN [] ELSE [1] END |
  CREATE (:IngestItem {id: 'message:' + $alternativeId, kind: 'message', targetId: $alternativeId,
                       conversationId: t.conversationId, state: $new, createdAt: $now}))
WITH t, a
MATCH (c:Conversation {id: t.conversationId})
SET c.currentTurnId = t.id, c.currentAlternativeId = a.id, c.updatedAt = $now
WITH t, a
OPTIONAL MATCH (pa:Alternative {id: coalesce($parentAlternativeId, '')})
OPTIONAL MATCH (proc:Process {id: coalesce($processId, '')})
OPTIONAL MATCH (run:Run {id: coalesce($runId, '')})
// GRAPH-1: the run that generates an agent Alternative, as an edge beside the runId property.
FOREACH (_ IN CASE WHEN run IS NULL THEN [] ELSE [1] END | CREATE (a)-[:GENERATED_BY]->(run))
FOREACH (_ IN CASE WHEN pa IS NULL THEN [] ELSE [1] END | CREATE (a)-[:RESPONDS_TO]->(pa))
FOREACH (_ IN CASE WHEN proc IS NULL THEN [] ELSE [1] END |
  CREATE (a)-[:EXECUTED_BY {createdAt: $now, version: $processVersion, versionId: $processVersionId}]->(proc))
RETURN a.sequence AS sequence
