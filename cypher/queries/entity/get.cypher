// One Entity with what visibility (ENT-2) and provenance need: its creator, the owners of the
// conversations whose Episodes mention it (or whose group it was extracted in), and one source
// per mentioning Episode.
MATCH (n:Entity {uuid: $uuid})
OPTIONAL MATCH (ep:Episodic)-[m:MENTIONS]->(n)
WITH n, collect({episodeId: ep.uuid, createdAt: m.createdAt, groupId: ep.group_id}) AS mentions
OPTIONAL MATCH (c:Conversation)
WHERE c.id = coalesce(n.groupId, '') OR c.id IN [x IN mentions | x.groupId]
WITH n, mentions, collect(DISTINCT c.ownerId) AS owners
RETURN n.uuid AS uuid, n.name AS name, n.summary AS summary, n.category AS category,
       n.facets AS facets, n.labels AS labels, n.source AS source, n.createdBy AS createdBy,
       n.createdAt AS createdAt, n.groupId AS groupId, n.status AS status, n.runId AS runId,
       [x IN mentions WHERE x.episodeId IS NOT NULL] AS mentions, owners
