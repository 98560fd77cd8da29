// SRCH-4: the owner forgets a memory. It is kept, archived (search and retrieved context skip
// archived content), its embedding and words no longer indexed: the label `Embedded` and its
// content go, so neither index finds it again. No row: not the caller's, or already forgotten.
MATCH (m:Memory {id: $id, ownerId: $ownerId})
WHERE m.status = 'current'
SET m.status = 'archived', m.archivedAt = $now, m.content = null, m.embedding = null
REMOVE m:Embedded
RETURN m.id AS id
