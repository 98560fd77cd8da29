// MEM-6: a compression that failed every attempt leaves memory as it was; the conversation
// is looked at again after $retryAt.
MERGE (m:MemoryUpkeep {conversationId: $conversationId})
SET m.failures = coalesce(m.failures, 0) + 1, m.retryAt = $retryAt, m.lastError = $error
RETURN m.conversationId AS id
