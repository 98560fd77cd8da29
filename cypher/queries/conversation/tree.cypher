// Every Turn and Alternative of a Conversation: one indexed scan, derivations done in Rust.
// Read under the Conversation's lock: every writer of active flags (a switch, a new Turn or
// Alternative) writes the Conversation in its commit, so a no-op SET that takes the lock waits
// for such a commit to be applied whole, and each Turn shows one active Alternative (TURN-2).
// Then the locks of the Alternatives a run generates, in id order (`turn/view.cypher` says
// why): the engine's pass settles one without writing the Conversation.
MATCH (c:Conversation {id: $id})
SET c.ownerId = c.ownerId
WITH c
CALL (c) {
  MATCH (g:Alternative {conversationId: c.id})
  WHERE g.runId IS NOT NULL
  WITH g ORDER BY g.id
  SET g.turnId = g.turnId
}
MATCH (t:ConversationTurn {conversationId: $id})-[h:HAS_ALTERNATIVE]->(a:Alternative)
OPTIONAL MATCH (a)-[e:EXECUTED_BY]->(p:Process)
RETURN t.id AS turnId, t.conversationId AS conversationId, t.speaker AS speaker,
       t.turnType AS turnType, t.sequence AS turnSequence, t.parentTurnId AS parentTurnId,
       t.viaAlternative AS viaAlternative, t.timestamp AS timestamp,
       a.id AS id, h.sequence AS sequence, h.isActive AS isActive, a.content AS content,
       a.createdAt AS createdAt, a.respondsTo AS respondsTo, p.id AS processId,
       e.version AS processVersion, a.runId AS runId, a.state AS state,
       a.episodeId AS episodeId, a.binding AS binding, a.boundAt AS boundAt, a.extractedAt AS extractedAt, a.error AS error
