// EPI-3: a binding's state agrees with its edges: a known state ($bindings); bound, extracted
// and skipped ($withEpisode) have exactly one HAS_CONTENT to an Episodic node and an episodeId;
// pending has neither.
MATCH (x:Alternative)
WHERE x.binding IS NOT NULL OR x.episodeId IS NOT NULL
OPTIONAL MATCH (x)-[:HAS_CONTENT]->(e:Episodic)
WITH x, count(e) AS n
WHERE NOT coalesce(x.binding, '') IN $bindings
   OR (x.binding IN $withEpisode AND (n <> 1 OR x.episodeId IS NULL))
   OR (x.binding = $pending AND (n > 0 OR x.episodeId IS NOT NULL))
RETURN x.id AS id
UNION
// A Summary whose content an admin corrected keeps the HAS_CONTENT edges of its earlier
// Episodes (listed in previousEpisodeIds); only the current one counts.
MATCH (x:Summary)
WHERE x.binding IS NOT NULL OR x.episodeId IS NOT NULL
OPTIONAL MATCH (x)-[:HAS_CONTENT]->(e:Episodic)
WITH x, collect(e.uuid) AS uuids
WITH x, size([u IN uuids WHERE u = x.episodeId]) AS n,
     size([u IN uuids WHERE u <> coalesce(x.episodeId, '')
                        AND NOT u IN coalesce(x.previousEpisodeIds, [])]) AS stray
WHERE NOT coalesce(x.binding, '') IN $bindings
   OR stray > 0
   OR (x.binding IN $withEpisode AND (n <> 1 OR x.episodeId IS NULL))
   OR (x.binding = $pending AND x.episodeId IS NOT NULL)
RETURN x.id AS id
