// What the ingestion worker needs of a Summary: its content and binding, and its sources in
// order (their Episodes are its extraction context).
MATCH (s:Summary {id: $id})
OPTIONAL MATCH (s)-[r:SUMMARIZES]->(src)
WITH s, r, src
ORDER BY r.order
WITH s, collect(CASE WHEN src IS NULL THEN null
                     ELSE {id: coalesce(src.id, src.uuid),
                           kind: CASE WHEN src.uuid IS NOT NULL AND src.id IS NULL THEN 'episode'
                                      WHEN src.conversationId IS NOT NULL AND src.turnId IS NOT NULL
                                        THEN 'message'
                                      ELSE 'summary' END,
                           episodeId: coalesce(src.episodeId, src.uuid),
                           binding: CASE WHEN src.uuid IS NOT NULL AND src.id IS NULL THEN $bound
                                         ELSE src.binding END} END) AS context
RETURN s.id AS id, s.conversationId AS conversationId, null AS speaker, s.content AS content,
       coalesce(s.correctedAt, s.createdAt) AS createdAt, s.binding AS binding,
       s.episodeId AS episodeId, context, s.revision AS revision,
       (s:Embedded AND coalesce(s.embeddedRevision, 1) = coalesce(s.revision, 1)) AS embedded
