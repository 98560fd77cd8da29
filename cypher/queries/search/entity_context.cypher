// An Entity's page: the caller's Alternatives whose Episodes mention it (latest 20,
// with whether each is its Turn's active one) and its facts still valid in the caller's
// conversations, each with the Entity at its other end (its neighbours).
MATCH (n:Entity {uuid: $uuid})
CALL {
  WITH n
  MATCH (ep:Episodic)-[:MENTIONS]->(n)
  MATCH (ep)<-[:HAS_CONTENT]-(a:Alternative)
  MATCH (c:Conversation {id: a.conversationId})
  WHERE c.ownerId = $callerId
  OPTIONAL MATCH (:ConversationTurn {id: a.turnId})-[h:HAS_ALTERNATIVE]->(a)
  WITH a, c, ep, h
  ORDER BY a.createdAt DESC
  LIMIT 20
  RETURN collect({alternativeId: a.id, conversationId: c.id, conversationTitle: c.title,
                  turnId: a.turnId, episodeId: ep.uuid, active: h.isActive,
                  text: a.content}) AS mentions
}
CALL {
  WITH n
  MATCH (n)-[r:RELATES_TO]-(m:Entity)
  WHERE r.expired_at IS NULL
  MATCH (c:Conversation {id: coalesce(r.group_id, '')})
  WHERE c.ownerId = $callerId
  WITH r, m
  ORDER BY r.created_at DESC
  LIMIT 50
  RETURN collect({uuid: r.uuid, name: r.name, fact: r.fact,
                  other: {uuid: m.uuid, name: m.name}}) AS facts
}
RETURN mentions, facts
