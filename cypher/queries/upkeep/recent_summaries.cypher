// The latest Summaries of a conversation (what an introspection reflects on).
MATCH (s:Summary {conversationId: $conversationId})
RETURN s.id AS id, s.content AS content, s.compressionLevel AS compressionLevel,
       s.createdAt AS createdAt
ORDER BY s.createdAt DESC
LIMIT $limit
