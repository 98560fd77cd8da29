// INT-1 after maxRotation shrinks: notes beyond the last position are archived.
MATCH (i:Introspection)
WHERE i.status = 'current' AND i.carouselPosition >= $maxRotation
SET i.status = 'archived', i.archivedAt = $now, i.slotKey = 'archived:' + i.id
RETURN count(i) AS n
