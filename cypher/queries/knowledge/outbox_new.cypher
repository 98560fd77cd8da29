// The relay's next batch: outbox items not yet handed to the broker, oldest first (a parent's
// content always commits before its child's, so per conversation this is causal order).
MATCH (o:IngestItem {state: $new})
RETURN o.id AS id, o.kind AS kind, o.targetId AS targetId, o.conversationId AS conversationId,
       o.createdAt AS createdAt
ORDER BY o.createdAt, o.targetId
LIMIT $limit
