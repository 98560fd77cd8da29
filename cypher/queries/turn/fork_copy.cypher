// CONV-3: the fork's own copy of the path (root first). Each copied Turn has one Alternative,
// active, with the original's content and EXECUTED_BY; COPIED_FROM records provenance.
MATCH (c:Conversation {id: $conversationId})
UNWIND $path AS s
CREATE (c)-[:HAS_TURN {sequence: s.sequence}]->(t:ConversationTurn {
  id: s.turnId, conversationId: $conversationId, speaker: s.speaker, turnType: s.turnType,
  sequence: s.sequence, parentTurnId: s.parentTurnId, viaAlternative: s.parentAlternativeId,
  timestamp: $now, altCount: 1})
CREATE (t)-[:HAS_ALTERNATIVE {isActive: true, sequence: 1}]->(a:Alternative {
  id: s.alternativeId, seqKey: s.turnId + '#1', turnId: s.turnId,
  conversationId: $conversationId, speaker: s.speaker, turnType: s.turnType, sequence: 1,
  depth: s.sequence,
  content: s.content, state: s.state, error: s.error, respondsTo: s.parentAlternativeId,
  createdAt: $now, binding: CASE WHEN s.content IS NULL THEN null ELSE $pending END})
// EPI-1: a fork is its own group; its copies become Episodes of their own (outbox, EPI-3).
FOREACH (_ IN CASE WHEN s.content IS NULL THEN [] ELSE [1] END |
  CREATE (:IngestItem {id: 'message:' + s.alternativeId, kind: 'message',
                       targetId: s.alternativeId, conversationId: $conversationId, state: $new,
                       createdAt: $now}))
WITH a, s
MATCH (o:Alternative {id: s.originAlternativeId})
CREATE (a)-[:COPIED_FROM]->(o)
WITH a, o
OPTIONAL MATCH (o)-[e:EXECUTED_BY]->(p:Process)
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END |
  CREATE (a)-[:EXECUTED_BY {createdAt: e.createdAt, version: e.version, versionId: e.versionId}]->(p))
RETURN count(a) AS n
