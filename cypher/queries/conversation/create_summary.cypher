// A Summary (SUM-1): HAS_SUMMARY from its Conversation, SUMMARIZES each source in order,
// COVERS_UP_TO the last Turn it stands in for, CREATED_BY_PROCESS when one made it and
// GENERATED_BY the run that made it, when named.
MATCH (c:Conversation {id: $conversationId}), (t:ConversationTurn {id: $coversUpToTurnId})
CREATE (s:Summary {id: $id, conversationId: $conversationId, content: $content,
                   coversUpToTurnId: $coversUpToTurnId, compressionLevel: $compressionLevel,
                   tokenCount: $tokenCount, sources: $sourceIds,
                   alternativeSources: $alternativeSources, summarySources: $summarySources,
                   createdByProcessId: $createdByProcessId, runId: $runId, createdAt: $now,
                   binding: $pending})
// EPI-3: the Summary's Episode is ingested through the outbox like an Alternative's.
CREATE (:IngestItem {id: 'summary:' + $id, kind: 'summary', targetId: $id,
                     conversationId: $conversationId, state: $new, createdAt: $now})
CREATE (c)-[:HAS_SUMMARY {createdAt: $now}]->(s)
CREATE (s)-[:COVERS_UP_TO]->(t)
WITH s
UNWIND $sources AS src
OPTIONAL MATCH (a:Alternative {id: src.id})
OPTIONAL MATCH (o:Summary {id: src.id})
OPTIONAL MATCH (e:Episodic {uuid: src.id})
WITH s, src, coalesce(a, o, e) AS target
CREATE (s)-[:SUMMARIZES {order: src.order}]->(target)
WITH s, count(*) AS n
OPTIONAL MATCH (p:Process {id: coalesce($createdByProcessId, '')})
OPTIONAL MATCH (r:Run {id: coalesce($runId, '')})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END |
  CREATE (s)-[:CREATED_BY_PROCESS {createdAt: $now}]->(p))
// GRAPH-2: the (compression) run that produced it.
FOREACH (_ IN CASE WHEN r IS NULL THEN [] ELSE [1] END | CREATE (s)-[:GENERATED_BY]->(r))
RETURN s.id AS id
