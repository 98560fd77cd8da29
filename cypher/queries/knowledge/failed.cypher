// EPI-3: gave up (the reason is kept; an Episode already bound stays bound to it).
MATCH (x:__LABEL__ {id: $id})
SET x.binding = 'failed', x.bindingError = $reason, x.failedAt = $now
RETURN x.id AS id
