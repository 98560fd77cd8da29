// EPI-3: a binding's state agrees with its edges: a known state; bound, extracted and skipped
// have exactly one HAS_CONTENT to an Episodic node and an episodeId; pending has neither.
MATCH (x:Alternative)
WHERE x.binding IS NOT NULL OR x.episodeId IS NOT NULL
OPTIONAL MATCH (x)-[:HAS_CONTENT]->(e:Episodic)
WITH x, count(e) AS n
WHERE NOT coalesce(x.binding, '') IN ['pending', 'bound', 'extracted', 'skipped', 'failed']
   OR (x.binding IN ['bound', 'extracted', 'skipped'] AND (n <> 1 OR x.episodeId IS NULL))
   OR (x.binding = 'pending' AND (n > 0 OR x.episodeId IS NOT NULL))
RETURN x.id AS id
UNION
MATCH (x:Summary)
WHERE x.binding IS NOT NULL OR x.episodeId IS NOT NULL
OPTIONAL MATCH (x)-[:HAS_CONTENT]->(e:Episodic)
WITH x, count(e) AS n
WHERE NOT coalesce(x.binding, '') IN ['pending', 'bound', 'extracted', 'skipped', 'failed']
   OR n > 1
   OR (x.binding IN ['bound', 'extracted', 'skipped'] AND (n <> 1 OR x.episodeId IS NULL))
   OR (x.binding = 'pending' AND (n > 0 OR x.episodeId IS NOT NULL))
RETURN x.id AS id
