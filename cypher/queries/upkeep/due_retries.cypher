// Conversations whose failed compression is due again (MEM-6 backoff).
MATCH (m:MemoryUpkeep)
WHERE m.retryAt IS NOT NULL AND m.retryAt <= $now
MATCH (c:Conversation {id: m.conversationId})
RETURN c.id AS id, c.updatedAt AS updatedAt
