// A user's replaced notes, newest first (INT-1: archived, never deleted).
MATCH (i:Introspection {ownerId: $ownerId})
WHERE i.status = 'archived'
RETURN i.id AS id, i.carouselPosition AS carouselPosition, i.content AS content,
       i.episodeId AS episodeId, i.binding AS binding, i.conversationContext AS conversationContext,
       i.createdAt AS createdAt, i.archivedAt AS archivedAt, i.revision AS revision,
       i.runId AS runId
ORDER BY i.archivedAt DESC, i.id DESC
LIMIT $limit
