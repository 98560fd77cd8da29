// A correction: new content, a new Episode to bind (a new HAS_CONTENT edge once bound); the
// old Episode and its HAS_CONTENT edge stay for audit: what a note said is never lost (INT-1).
MATCH (i:Introspection {id: $id, ownerId: $ownerId})
WHERE i.status = 'current' AND i.revision = $expectedRevision
SET i.previousContents = coalesce(i.previousContents, []) + [i.content],
    i.previousEpisodeIds = coalesce(i.previousEpisodeIds, []) +
                           CASE WHEN i.episodeId IS NULL THEN [] ELSE [i.episodeId] END,
    i.content = $content, i.episodeId = null, i.binding = $pending,
    i.revision = i.revision + 1, i.correctedAt = $now
// One outbox item per note: one still on its way is sent again and binds the new content.
MERGE (o:IngestItem {id: 'introspection:' + $id})
  ON CREATE SET o.kind = 'introspection', o.targetId = $id,
                o.conversationId = 'system_introspection', o.createdAt = $now
SET o.state = $new
RETURN i.id AS id
