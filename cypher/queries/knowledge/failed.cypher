// EPI-3: gave up (the reason is kept; an Episode already bound stays bound to it); the outbox
// item goes with it.
MATCH (x:__LABEL__ {id: $id})
SET x.binding = $failed, x.bindingError = $reason, x.failedAt = $now
WITH x
OPTIONAL MATCH (o:IngestItem {id: $itemId})
DELETE o
RETURN DISTINCT x.id AS id
