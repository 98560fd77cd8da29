// Recall over Entities: graphiti-core's Entity nodes and the user's own, by the
// meaning of their name (vector index on graphiti's `name_embedding`) and by the words of their
// name and summary (full-text). Visible as ENT-2 says (creator, or owner of the conversation —
// or memory group, SRCH-4 — the Entity was extracted in or is mentioned by); its sources are up to five mentioning
// Alternatives the caller owns, with whether each is its Turn's active one.
CALL {
  WITH $vector AS v
  WHERE v IS NOT NULL
  CALL db.index.vector.queryNodes('entity_name_embedding', $k, v) YIELD node, score
  RETURN node AS n, 'vector' AS signal, score
  UNION ALL
  WITH $text AS t
  WHERE t <> ''
  CALL db.index.fulltext.queryNodes('entity_text', t, {limit: $k}) YIELD node, score
  RETURN node AS n, 'text' AS signal, score
}
WITH n, signal, score
OPTIONAL MATCH (ep:Episodic)-[:MENTIONS]->(n)
WITH n, signal, score, collect(DISTINCT ep) AS episodes
OPTIONAL MATCH (c:Conversation)
WHERE c.id = coalesce(n.group_id, '') OR c.id IN [e IN episodes | e.group_id]
WITH n, signal, score, episodes,
     collect(DISTINCT c.ownerId)
       + [g IN ([n.group_id] + [e IN episodes | e.group_id])
          WHERE g STARTS WITH 'memory_' | substring(toString(g), 7)] AS owners
WHERE (n.createdBy = $callerId OR $callerId IN owners)
  AND coalesce(n.status, '') <> 'rejected'
CALL {
  WITH episodes
  UNWIND episodes AS ep
  MATCH (ep)<-[:HAS_CONTENT]-(a:Alternative)
  MATCH (c:Conversation {id: a.conversationId})
  WHERE c.ownerId = $callerId
  OPTIONAL MATCH (:ConversationTurn {id: a.turnId})-[h:HAS_ALTERNATIVE]->(a)
  WITH a, c, h, ep
  ORDER BY a.createdAt DESC
  RETURN collect({alternativeId: a.id, conversationId: c.id, conversationTitle: c.title,
                  turnId: a.turnId, active: h.isActive, episodeId: ep.uuid})[..5] AS sources
}
WITH n, signal, score, sources
WHERE $conversationId IS NULL OR n.group_id = $conversationId
   OR any(s IN sources WHERE s.conversationId = $conversationId)
RETURN n.uuid AS id, 'entity' AS kind, signal, score, n.name AS name, n.summary AS content,
       n.group_id AS conversationId, sources
