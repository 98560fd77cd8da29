// Conversations whose content or position changed since $since: the upkeep loop measures
// their working memory.
MATCH (c:Conversation)
WHERE c.updatedAt >= $since AND c.status = 'active' AND c.currentAlternativeId IS NOT NULL
RETURN c.id AS id, c.updatedAt AS updatedAt
ORDER BY c.updatedAt
LIMIT $limit
