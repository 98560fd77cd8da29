// Working memory's first read: a Conversation (every property, as `get.cypher` reads them)
// and the message its retrieved context searches for, the named Alternative's text, else the
// current one's: one statement where there were two (each costs Neo4j about 1.7 ms of CPU).
MATCH (c:Conversation {id: $id})
OPTIONAL MATCH (m:Alternative {id: coalesce($alternativeId, c.currentAlternativeId)})
RETURN c {.*} AS conversation,
       CASE WHEN m IS NULL THEN null
            ELSE {id: m.id, content: m.content, conversationId: m.conversationId} END AS message
