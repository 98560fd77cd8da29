// Conversations whose give-up wait ended since the last tick (MEM-6): each is looked at once
// more; if it is still over budget, it is claimed again.
MATCH (m:MemoryUpkeep)
WHERE m.retryAt IS NOT NULL AND m.retryAt >= $since AND m.retryAt <= $now
MATCH (c:Conversation {id: m.conversationId})
RETURN c.id AS id, c.updatedAt AS updatedAt
