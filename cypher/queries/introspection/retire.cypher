// A user retires a current note: it leaves the carousel and is archived, never deleted (INT-1);
// its position is free again.
MATCH (i:Introspection {id: $id, ownerId: $ownerId})
WHERE i.status = 'current'
SET i.status = 'archived', i.archivedAt = $now, i.slotKey = 'archived:' + i.id,
    i.retiredAt = $now
RETURN i.id AS id
