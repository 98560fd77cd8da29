// PATCH /v1/settings: the whole settings document, guarded by the revision it was decided on
// (0: none stored yet; the unique id makes two first writers collide at commit).
OPTIONAL MATCH (old:MemorySettings {id: 'memory'})
WITH old WHERE coalesce(old.revision, 0) = $expectedRevision
FOREACH (_ IN CASE WHEN old IS NULL THEN [1] ELSE [] END |
  CREATE (:MemorySettings {id: 'memory', doc: $doc, maxRotation: $maxRotation, revision: 1,
                           updatedAt: $now, updatedBy: $by}))
FOREACH (_ IN CASE WHEN old IS NULL THEN [] ELSE [1] END |
  SET old.doc = $doc, old.maxRotation = $maxRotation, old.revision = old.revision + 1,
      old.updatedAt = $now, old.updatedBy = $by)
RETURN 'memory' AS id
