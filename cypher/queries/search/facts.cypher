// Recall over facts: graphiti-core's RELATES_TO edges between Entities, by the
// meaning of the fact (vector index on `fact_embedding`) and its words (full-text); only facts
// still valid (not expired by a later Episode), of conversations the caller owns or of their
// memory group (SRCH-4). Its sources are
// the Alternatives whose Episodes stated it.
CALL {
  WITH $vector AS v
  WHERE v IS NOT NULL
  CALL db.index.vector.queryRelationships('fact_embedding', $k, v) YIELD relationship, score
  RETURN relationship AS r, 'vector' AS signal, score
  UNION ALL
  WITH $text AS t
  WHERE t <> ''
  CALL db.index.fulltext.queryRelationships('fact_text', t, {limit: $k}) YIELD relationship, score
  RETURN relationship AS r, 'text' AS signal, score
}
WITH r, signal, score
WHERE r.expired_at IS NULL AND r.fact IS NOT NULL
OPTIONAL MATCH (c:Conversation {id: coalesce(r.group_id, '')})
WITH r, signal, score, c
WHERE (c.ownerId = $callerId OR r.group_id = 'memory_' + $callerId)
  AND ($conversationId IS NULL OR c.id = $conversationId)
CALL {
  WITH r, c
  UNWIND coalesce(r.episodes, []) AS uuid
  MATCH (:Episodic {uuid: uuid})<-[:HAS_CONTENT]-(a:Alternative)
  WHERE a.conversationId = c.id
  OPTIONAL MATCH (:ConversationTurn {id: a.turnId})-[h:HAS_ALTERNATIVE]->(a)
  RETURN collect({alternativeId: a.id, conversationId: c.id, conversationTitle: c.title,
                  turnId: a.turnId, active: h.isActive, episodeId: uuid})[..5] AS sources
}
RETURN r.uuid AS id, 'fact' AS kind, signal, score, r.name AS name, r.fact AS content,
       c.id AS conversationId, sources
