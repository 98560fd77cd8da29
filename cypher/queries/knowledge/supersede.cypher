// SRCH-7, what is current: a user's message that says something changed (the caller checked
// its change cue) supersedes the most similar older message of the same user, when their
// cosine is at least the rule's (given on the index's (1 + cos) / 2 scale). Not a message of
// its own Turn (an edit is a version, not news), and never a fork's copy either way (CONV-3:
// a copy is dated when it was copied, not when it was said). Only the newest $scanCap of the
// user's messages are compared. At most one edge a pair (MERGE): an embedding written again (a
// redelivery, the backfill) finds the same one.
MATCH (n:Alternative {id: $id})
WHERE n:Embedded AND n.speaker = 'user' AND NOT (n)-[:COPIED_FROM]->()
MATCH (here:Conversation {id: n.conversationId})
CALL {
  WITH n, here
  MATCH (c:Conversation {ownerId: here.ownerId})
  MATCH (o:Alternative {conversationId: c.id})
  WHERE o:Embedded AND o.speaker = 'user' AND coalesce(o.turnId, '') <> n.turnId
    AND o.createdAt < n.createdAt AND coalesce(o.status, '') <> 'archived'
    AND NOT (o)-[:COPIED_FROM]->()
  WITH n, o
  ORDER BY o.createdAt DESC
  LIMIT $scanCap
  WITH n, o
  WHERE size(o.embedding) = size(n.embedding)
  WITH o, vector.similarity.cosine(n.embedding, o.embedding) AS score
  WHERE score >= $minScore
  RETURN o, score
  ORDER BY score DESC
  LIMIT 1
}
MERGE (n)-[s:SUPERSEDES]->(o)
ON CREATE SET s.at = $now, s.similarity = 2 * score - 1, s.rule = 'change-cue'
RETURN o.id AS id
