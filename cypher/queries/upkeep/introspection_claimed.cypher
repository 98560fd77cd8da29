// MEM-2: an introspection was claimed for this conversation's compressions: count again.
MATCH (m:MemoryUpkeep {conversationId: $conversationId})
SET m.sinceIntrospection = 0, m.lastIntrospectionAt = $now
RETURN m.conversationId AS id
