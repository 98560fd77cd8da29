// TURN-7: at most one HAS_CONTENT, agreeing with the Alternative's recorded episodeId.
MATCH (a:Alternative)
OPTIONAL MATCH (a)-[:HAS_CONTENT]->(e)
WITH a, count(e) AS n, collect(e.uuid) AS uuids
WHERE n > 1 OR (n = 1 AND uuids <> [a.episodeId]) OR (n = 0 AND a.episodeId IS NOT NULL)
RETURN a.id AS id
