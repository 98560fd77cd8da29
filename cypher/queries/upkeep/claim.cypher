// MEM-6: claims a loop's subject (a conversation to compress, a user's carousel, an Entity to
// enrich) unless it is claimed already; the unique key makes a concurrent second claim fail
// at commit. The claim holds what the run was given and what its result will be applied to.
OPTIONAL MATCH (x:UpkeepClaim {key: $key})
WITH x WHERE x IS NULL
CREATE (k:UpkeepClaim {key: $key, id: $id, kind: $kind, subjectId: $subjectId,
                       ownerId: $ownerId, processId: $processId, payload: $payload,
                       createdAt: $now})
RETURN k.id AS id
