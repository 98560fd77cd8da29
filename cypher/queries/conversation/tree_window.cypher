// The Turns of a Conversation whose sequence (depth) lies in $from..$to, with their
// Alternatives: the windowed tree. Derivations are done in Rust. Read under the Conversation's
// lock, then those of the window's Alternatives a run generates, all before any is read
// (conversation/tree.cypher says why).
MATCH (c:Conversation {id: $id})
SET c.ownerId = c.ownerId
WITH c
MATCH (t:ConversationTurn {conversationId: $id})
WHERE t.sequence >= $from AND t.sequence <= $to
WITH collect(t) AS window
CALL (window) {
  UNWIND window AS w
  MATCH (w)-[:HAS_ALTERNATIVE]->(g:Alternative)
  WHERE g.runId IS NOT NULL
  WITH g ORDER BY g.id
  SET g.turnId = g.turnId
}
UNWIND window AS t
MATCH (t)-[h:HAS_ALTERNATIVE]->(a:Alternative)
OPTIONAL MATCH (a)-[e:EXECUTED_BY]->(p:Process)
RETURN t.id AS turnId, t.conversationId AS conversationId, t.speaker AS speaker,
       t.turnType AS turnType, t.sequence AS turnSequence, t.parentTurnId AS parentTurnId,
       t.viaAlternative AS viaAlternative, t.timestamp AS timestamp,
       a.id AS id, h.sequence AS sequence, h.isActive AS isActive, a.content AS content,
       a.createdAt AS createdAt, a.respondsTo AS respondsTo, p.id AS processId,
       e.version AS processVersion, a.runId AS runId, a.state AS state,
       a.episodeId AS episodeId, a.binding AS binding, a.boundAt AS boundAt, a.extractedAt AS extractedAt, a.error AS error
