// Items handed to the broker long ago and still not final: published again (the ingestion
// worker is idempotent), so a message lost with a purged queue cannot strand a binding.
MATCH (o:IngestItem {state: $published})
WHERE o.publishedAt < $before
RETURN o.id AS id, o.kind AS kind, o.targetId AS targetId, o.conversationId AS conversationId,
       o.createdAt AS createdAt
ORDER BY o.createdAt, o.targetId
LIMIT $limit
