// EPI-2, TURN-7: the binding backfill. The Episodic node is Graphiti's own: the service saved it
// under the derived uuid (PUT /episodes) before this runs, in this same database, and it is only
// matched here, never made (`found` false: the service writes to another graph). HAS_CONTENT is
// created once and episodeId set once: a row comes back only if it was unset or already this uuid.
MATCH (x:__LABEL__ {id: $id})
WHERE x.episodeId IS NULL OR x.episodeId = $uuid
OPTIONAL MATCH (e:Episodic {uuid: $uuid})
OPTIONAL MATCH (x)-[h:HAS_CONTENT]->(e)
WITH x, e, count(h) AS bound
FOREACH (_ IN CASE WHEN e IS NOT NULL AND bound = 0 THEN [1] ELSE [] END |
  CREATE (x)-[:HAS_CONTENT {source: $edgeSource, createdAt: $now}]->(e))
FOREACH (_ IN CASE WHEN e IS NULL THEN [] ELSE [1] END |
  SET x.episodeId = $uuid, x.boundAt = coalesce(x.boundAt, $now),
      x.binding = CASE WHEN x.binding IS NULL OR x.binding = $pending THEN $bound
                       ELSE x.binding END)
RETURN x.id AS id, e IS NOT NULL AS found
