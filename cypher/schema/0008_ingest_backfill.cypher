// Content written before the knowledge layer is ingested like new content: every
// Alternative with content and no binding yet gets its outbox item (EPI-3), in one statement.
MATCH (a:Alternative)
WHERE a.binding IS NULL AND a.content IS NOT NULL AND trim(a.content) <> ''
SET a.binding = 'pending'
CREATE (:IngestItem {id: 'message:' + a.id, kind: 'message', targetId: a.id,
                     conversationId: a.conversationId, state: 'new', createdAt: a.createdAt});
MATCH (s:Summary)
WHERE s.binding IS NULL
SET s.binding = 'pending'
CREATE (:IngestItem {id: 'summary:' + s.id, kind: 'summary', targetId: s.id,
                     conversationId: s.conversationId, state: 'new', createdAt: s.createdAt})
