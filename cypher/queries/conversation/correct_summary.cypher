// Admin repair of a Summary: tokenCount, and with $rebind new content, which is a new Episode
// to bind (a new HAS_CONTENT once bound); the old content, its Episode and its HAS_CONTENT edge
// stay for audit. SUMMARIZES, COVERS_UP_TO, CREATED_BY_PROCESS and compressionLevel never
// change (SUM-1).
MATCH (s:Summary {id: $id})
WHERE coalesce(s.revision, 1) = $expectedRevision
SET s.tokenCount = coalesce($tokenCount, s.tokenCount)
WITH s WHERE $rebind
SET s.previousContents = coalesce(s.previousContents, []) + [s.content],
    s.previousEpisodeIds = coalesce(s.previousEpisodeIds, []) +
                           CASE WHEN s.episodeId IS NULL THEN [] ELSE [s.episodeId] END,
    s.content = $content, s.episodeId = null, s.binding = $pending,
    s.revision = coalesce(s.revision, 1) + 1, s.correctedAt = $now
RETURN s.id AS id
