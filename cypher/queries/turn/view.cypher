// One Turn as the API shows it: its Alternatives, whether anything responds to each, and the
// parent Turn's active Alternative (for staleness, TURN-6). Read under the locks of the Turn
// and its parent, in that order (as a new Turn's checks take them): every writer of a Turn's
// active flags writes the Turn first (turn/switch.cypher, turn/add_alternative.cypher), so a
// no-op SET that takes its lock waits for such a commit to be applied whole, and the view shows
// exactly one active Alternative (TURN-2). Then the locks of the Alternatives a run generates,
// in id order: the engine's pass settles one by writing it alone (`run/apply_batch.cypher`), so
// without them a read could show a settled Alternative without its content, or two commits'
// Alternatives. The reader's transaction changes nothing.
MATCH (t:ConversationTurn {id: $turnId})
SET t.conversationId = t.conversationId
WITH t
OPTIONAL MATCH (pt:ConversationTurn {id: coalesce(t.parentTurnId, '')})
FOREACH (_ IN CASE WHEN pt IS NULL THEN [] ELSE [1] END |
  SET pt.conversationId = pt.conversationId)
WITH DISTINCT t
CALL (t) {
  MATCH (t)-[:HAS_ALTERNATIVE]->(g:Alternative)
  WHERE g.runId IS NOT NULL
  WITH g ORDER BY g.id
  SET g.turnId = g.turnId
}
MATCH (t)-[h:HAS_ALTERNATIVE]->(a:Alternative)
OPTIONAL MATCH (a)-[e:EXECUTED_BY]->(p:Process)
OPTIONAL MATCH (k:Alternative)-[:RESPONDS_TO]->(a)
WITH t, h, a, e, p, count(k) AS children
OPTIONAL MATCH (:ConversationTurn {id: coalesce(t.parentTurnId, '')})-[ph:HAS_ALTERNATIVE {isActive: true}]->(pa:Alternative)
RETURN t.id AS turnId, t.conversationId AS conversationId, t.speaker AS speaker,
       t.turnType AS turnType, t.sequence AS turnSequence, t.parentTurnId AS parentTurnId,
       t.viaAlternative AS viaAlternative, t.timestamp AS timestamp,
       a.id AS id, h.sequence AS sequence, h.isActive AS isActive, a.content AS content,
       a.createdAt AS createdAt, a.respondsTo AS respondsTo, p.id AS processId,
       e.version AS processVersion, a.runId AS runId, a.state AS state,
       a.episodeId AS episodeId, a.binding AS binding, a.boundAt AS boundAt, a.extractedAt AS extractedAt, a.error AS error, children > 0 AS hasChildren,
       pa.id AS parentActive
