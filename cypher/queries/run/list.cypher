// Runs newest first (run ids are UUIDv7, so id order is creation order), before the cursor.
// $ownerId is the caller for a user (runs are private to who started them), null for an admin;
// $idPrefix narrows to ids that start with it (the console's search box; the id index serves it).
// Read without locks (a list must not hold the locks of runs the engine is writing); a line
// that shows a commit in part is read again under its Run's lock (run/list_row.cypher).
// Each line names its Process and owner, and, for a run that answers a conversation turn, the
// message it answered: the user's Alternative its own Alternative RESPONDS_TO (a preview only).
// Every lookup after the page is by a unique id, so the list costs what the page costs.
MATCH (r:Run)
WHERE ($ownerId IS NULL OR r.ownerId = $ownerId)
  AND ($before = '' OR r.id < $before)
  AND ($idPrefix IS NULL OR r.id STARTS WITH $idPrefix)
  AND ($processId IS NULL OR r.processId = $processId)
  AND ($status IS NULL OR r.status = $status)
WITH r
ORDER BY r.id DESC
LIMIT $limit
OPTIONAL MATCH (p:Process {id: r.processId})
OPTIONAL MATCH (u:User {id: r.ownerId})
OPTIONAL MATCH (a:Alternative {id: coalesce(r.alternativeId, '')})
OPTIONAL MATCH (q:Alternative {id: coalesce(a.respondsTo, '')})
RETURN r.id AS id, r.processId AS processId, r.processVersion AS processVersion,
       r.status AS status, r.depth AS depth, r.parentRunId AS parentRunId, r.ownerId AS ownerId,
       r.createdAt AS createdAt, r.startedAt AS startedAt, r.finishedAt AS finishedAt,
       r.triggerKind AS triggerKind, r.triggerSubjectId AS triggerSubjectId,
       p.name AS processName, u.name AS ownerName,
       a.conversationId AS conversationId, a.id AS answerId, a.turnId AS answerTurnId,
       q.id AS messageId, q.turnId AS messageTurnId, left(q.content, $preview) AS messageText
ORDER BY id DESC
