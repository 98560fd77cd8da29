CREATE (c:RevisionClaim {key: $key, aggregate: $aggregate})
RETURN c.key AS key
