// WM-2: the carousel of a Conversation's owner (introspection is user-scoped), by position.
MATCH (c:Conversation {id: $conversationId})
MATCH (i:Introspection {ownerId: c.ownerId})
WHERE i.status = 'current'
RETURN i.id AS id, i.carouselPosition AS carouselPosition, i.content AS content,
       i.episodeId AS episodeId, i.binding AS binding, i.conversationContext AS conversationContext,
       i.createdAt AS createdAt, i.archivedAt AS archivedAt, i.revision AS revision,
       i.runId AS runId
ORDER BY i.carouselPosition
