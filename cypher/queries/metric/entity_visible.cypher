// MET-1: the measured entity exists (of the definition's scope) and the caller may see it.
MATCH (e:__LABEL__ {id: $id})
WHERE $admin OR e.ownerId = $callerId OR coalesce(e.shared, false)
RETURN e.id AS id
