// After a compression's Summary is written: the conversation's counters (MEM-2 counts
// compressions since the last introspection), an earlier give-up cleared.
MERGE (m:MemoryUpkeep {conversationId: $conversationId})
SET m.compressions = coalesce(m.compressions, 0) + 1,
    m.sinceIntrospection = coalesce(m.sinceIntrospection, 0) + 1,
    m.retryAt = null, m.lastCompressedAt = $now, m.lastError = null
RETURN m.compressions AS compressions, m.sinceIntrospection AS sinceIntrospection
