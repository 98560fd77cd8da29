// A user's carousel (INT-1): the current note of each position.
MATCH (i:Introspection {ownerId: $ownerId})
WHERE i.status = 'current'
RETURN i.id AS id, i.carouselPosition AS carouselPosition, i.content AS content,
       i.episodeId AS episodeId, i.binding AS binding, i.conversationContext AS conversationContext,
       i.createdAt AS createdAt, i.archivedAt AS archivedAt, i.revision AS revision,
       i.runId AS runId
ORDER BY i.carouselPosition
