// EPI-1 (checked in Rust, which derives the uuid): every bound Alternative, Summary or Memory with its
// Episode's name and group.
MATCH (x:Alternative)
WHERE x.episodeId IS NOT NULL
OPTIONAL MATCH (x)-[:HAS_CONTENT]->(e:Episodic)
RETURN x.id AS id, 'message' AS kind, x.episodeId AS episodeId,
       x.conversationId AS conversationId, e.name AS name, e.group_id AS groupId,
       null AS revision
UNION
MATCH (x:Summary)
WHERE x.episodeId IS NOT NULL
OPTIONAL MATCH (x)-[:HAS_CONTENT]->(e:Episodic {uuid: x.episodeId})
RETURN x.id AS id, 'summary' AS kind, x.episodeId AS episodeId,
       x.conversationId AS conversationId, e.name AS name, e.group_id AS groupId,
       x.revision AS revision
UNION
MATCH (x:Memory)
WHERE x.episodeId IS NOT NULL
OPTIONAL MATCH (x)-[:HAS_CONTENT]->(e:Episodic {uuid: x.episodeId})
RETURN x.id AS id, 'memory' AS kind, x.episodeId AS episodeId,
       'memory_' + x.ownerId AS conversationId, e.name AS name, e.group_id AS groupId,
       null AS revision
