// ENT-5: a merge moved every edge and left a resolvable tombstone. A merged node (MergedEntity)
// has no relationship left, its `mergedInto` is an Entity that lists it in `mergedFrom`; every
// uuid an Entity lists in `mergedFrom` is such a tombstone pointing at it.
MATCH (m:MergedEntity)
OPTIONAL MATCH (s:Entity {uuid: coalesce(m.mergedInto, '')})
WITH m, s
WHERE m:Entity OR s IS NULL OR NOT m.uuid IN coalesce(s.mergedFrom, [])
   OR EXISTS { MATCH (m)--() }
RETURN m.uuid AS id
UNION
MATCH (s:Entity)
WHERE s.mergedFrom IS NOT NULL
UNWIND s.mergedFrom AS uuid
OPTIONAL MATCH (m:MergedEntity {uuid: uuid})
WITH s, m
WHERE m IS NULL OR m.mergedInto <> s.uuid
RETURN s.uuid AS id
