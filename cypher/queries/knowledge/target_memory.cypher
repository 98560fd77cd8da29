// What the ingestion worker needs of a Memory (SRCH-4): its content and binding. Its Episode's
// group is its owner's own, `memory_<ownerId>`, so what Graphiti extracts from it is theirs.
MATCH (m:Memory {id: $id})
RETURN m.id AS id, 'memory_' + m.ownerId AS conversationId, null AS speaker,
       m.content AS content, m.createdAt AS createdAt, m.binding AS binding,
       m.episodeId AS episodeId, [] AS context, null AS revision,
       (m:Embedded) AS embedded
