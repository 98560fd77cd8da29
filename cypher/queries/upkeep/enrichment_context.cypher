// What an enrichment run is given: the Entity and the Episodes that mention it (latest first).
MATCH (n:Entity {uuid: $uuid})
OPTIONAL MATCH (ep:Episodic)-[:MENTIONS]->(n)
WITH n, ep ORDER BY ep.created_at DESC
WITH n, collect(ep.content)[0..$limit] AS mentions
RETURN n.uuid AS uuid, n.name AS name, n.summary AS summary,
       coalesce(n.category, head([l IN labels(n) WHERE l <> 'Entity'])) AS category,
       n.facets AS facets, mentions
