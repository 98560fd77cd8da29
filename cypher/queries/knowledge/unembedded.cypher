// Recall: bound content ($withEpisode: the bindings whose Episode is there) without an embedding
// of its current revision — bound before embeddings existed, or whose embedding failed — for the
// episode pool's backfill at start.
MATCH (x)
WHERE (x:Alternative OR x:Summary OR x:Introspection OR x:Memory)
  AND x.binding IN $withEpisode
  AND x.content IS NOT NULL AND x.content <> ''
  AND (NOT x:Embedded OR coalesce(x.embeddedRevision, 1) <> coalesce(x.revision, 1))
RETURN CASE WHEN x:Alternative THEN 'message' WHEN x:Summary THEN 'summary'
            WHEN x:Memory THEN 'memory' ELSE 'introspection' END AS kind,
       x.id AS id, x.content AS content, coalesce(x.revision, 1) AS revision
LIMIT $limit
