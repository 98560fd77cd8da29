MATCH (c:RevisionClaim {key: $key})
DELETE c
