MATCH (c:RevisionClaim {aggregate: $aggregate})
DELETE c
