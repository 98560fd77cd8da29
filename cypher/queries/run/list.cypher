// Runs newest first (run ids are UUIDv7, so id order is creation order), before the cursor.
// $ownerId is the caller for a user (runs are private to who started them), null for an admin.
// Read without locks (a list must not hold the locks of runs the engine is writing); a line
// that shows a commit in part is read again under its Run's lock (run/list_row.cypher).
MATCH (r:Run)
WHERE ($ownerId IS NULL OR r.ownerId = $ownerId)
  AND ($before = '' OR r.id < $before)
  AND ($processId IS NULL OR r.processId = $processId)
  AND ($status IS NULL OR r.status = $status)
RETURN r.id AS id, r.processId AS processId, r.processVersion AS processVersion,
       r.status AS status, r.depth AS depth, r.parentRunId AS parentRunId, r.ownerId AS ownerId,
       r.createdAt AS createdAt, r.startedAt AS startedAt, r.finishedAt AS finishedAt,
       r.triggerKind AS triggerKind, r.triggerSubjectId AS triggerSubjectId
ORDER BY r.id DESC
LIMIT $limit
