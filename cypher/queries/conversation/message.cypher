// An Alternative's text and its conversation: the message working memory searches for its
// retrieved context, read beside the path (conversation/path.cypher) instead of after it.
MATCH (a:Alternative {id: $alternativeId})
RETURN a.content AS content, a.conversationId AS conversationId
