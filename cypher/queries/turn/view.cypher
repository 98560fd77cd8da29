// One Turn as the API shows it: its Alternatives, whether anything responds to each, and the
// parent Turn's active Alternative (for staleness, TURN-6).
MATCH (t:ConversationTurn {id: $turnId})-[h:HAS_ALTERNATIVE]->(a:Alternative)
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
