// One Entity with what visibility (ENT-2) and provenance need: its creator, the owners of the
// conversations whose Episodes mention it (or whose group it was extracted in; a memory group,
// `memory_<ownerId>`, is its owner's: SRCH-4), and one source
// per mentioning Episode. An Entity Graphiti extracted is graphiti-core's own node: its group,
// creation time and MENTIONS times are graphiti's `group_id` / `created_at` (docs/knowledge.md).
MATCH (n:Entity {uuid: $uuid})
OPTIONAL MATCH (ep:Episodic)-[m:MENTIONS]->(n)
WITH n, collect({episodeId: ep.uuid, createdAt: coalesce(m.createdAt, toString(m.created_at)),
                 groupId: ep.group_id}) AS mentions
OPTIONAL MATCH (c:Conversation)
WHERE c.id = coalesce(n.group_id, '') OR c.id IN [x IN mentions | x.groupId]
WITH n, mentions,
     collect(DISTINCT c.ownerId)
       + [g IN ([n.group_id] + [x IN mentions | x.groupId])
          WHERE g STARTS WITH 'memory_' | substring(toString(g), 7)] AS owners
RETURN n.uuid AS uuid, n.name AS name, n.summary AS summary,
       coalesce(n.category, head([l IN labels(n) WHERE l <> 'Entity'])) AS category,
       n.facets AS facets, labels(n) AS labels, coalesce(n.source, 'graphiti') AS source,
       n.createdBy AS createdBy, coalesce(n.createdAt, toString(n.created_at)) AS createdAt,
       n.group_id AS groupId, n.status AS status, n.runId AS runId,
       [x IN mentions WHERE x.episodeId IS NOT NULL] AS mentions, owners
