// EPI-2, TURN-7: the binding backfill. The Episodic node is MERGEd by its derived uuid (on a
// shared Neo4j it is the node Graphiti wrote), HAS_CONTENT is created once, and episodeId is set
// once: a row comes back only if it was unset or already this uuid.
MATCH (x:__LABEL__ {id: $id})
WHERE x.episodeId IS NULL OR x.episodeId = $uuid
MERGE (e:Episodic {uuid: $uuid})
  ON CREATE SET e.name = $name, e.group_id = $groupId, e.source = $source,
                e.source_description = $sourceDescription, e.content = $content,
                e.valid_at = $validAt, e.created_at = $now
WITH x, e
OPTIONAL MATCH (x)-[h:HAS_CONTENT]->(e)
WITH x, e, count(h) AS bound
FOREACH (_ IN CASE WHEN bound = 0 THEN [1] ELSE [] END |
  CREATE (x)-[:HAS_CONTENT {source: $edgeSource, createdAt: $now}]->(e))
SET x.episodeId = $uuid, x.boundAt = coalesce(x.boundAt, $now),
    x.binding = CASE WHEN x.binding IS NULL OR x.binding = 'pending' THEN 'bound'
                     ELSE x.binding END
RETURN x.id AS id
