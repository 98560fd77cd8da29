// EPI-3 after a Summary's content was corrected: its outbox item (one per Summary; one still on
// its way is sent again and binds the new content).
MATCH (s:Summary {id: $id})
MERGE (o:IngestItem {id: 'summary:' + $id})
  ON CREATE SET o.kind = 'summary', o.targetId = $id, o.conversationId = s.conversationId,
                o.createdAt = $now
SET o.state = $new
RETURN o.id AS id
