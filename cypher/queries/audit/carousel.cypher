// INT-1: every note is current or archived; a current note lies in [0, maxRotation-1], holds
// its position's slotKey and shares it with no other current note of its owner; an archived
// one says when; a bound note's Episode is in group `system_introspection`.
OPTIONAL MATCH (s:MemorySettings {id: 'memory'})
WITH coalesce(s.maxRotation, 10) AS maxRotation
MATCH (i:Introspection)
OPTIONAL MATCH (o:Introspection {ownerId: i.ownerId, carouselPosition: i.carouselPosition})
WHERE o.status = 'current' AND o.id <> i.id AND i.status = 'current'
OPTIONAL MATCH (i)-[:HAS_CONTENT]->(e:Episodic)
WITH i, maxRotation, count(o) AS sharing, collect(e.group_id) AS groups
WHERE NOT i.status IN ['current', 'archived']
   OR (i.status = 'current' AND (i.carouselPosition < 0 OR i.carouselPosition >= maxRotation
       OR i.slotKey <> i.ownerId + '#' + toString(i.carouselPosition) OR sharing > 0))
   OR (i.status = 'archived' AND (i.archivedAt IS NULL OR i.slotKey <> 'archived:' + i.id))
   OR any(g IN groups WHERE g <> 'system_introspection')
RETURN i.id AS id
