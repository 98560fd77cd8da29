// ENT-5: the Entity a merged one's uuid now names: its tombstone's `mergedInto` (no row when
// the uuid is no tombstone).
MATCH (m:MergedEntity {uuid: $uuid})
RETURN m.mergedInto AS into
