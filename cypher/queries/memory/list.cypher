// SRCH-4: the caller's memories that are not forgotten, newest first.
MATCH (m:Memory {ownerId: $ownerId})
WHERE m.status = 'current'
RETURN m.id AS id, m.content AS content, m.createdAt AS createdAt, m.runId AS runId,
       m.conversationId AS conversationId, m.binding AS binding, m:Embedded AS embedded
ORDER BY m.createdAt DESC, m.id DESC
LIMIT $limit
