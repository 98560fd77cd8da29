// What the ingestion worker needs of an Alternative: its content and binding, and the nearest
// ten Alternatives on its own path (RESPONDS_TO, root-ward), whose Episodes are the extraction
// context (EPI-5: never a sibling branch's).
MATCH (a:Alternative {id: $id})
OPTIONAL MATCH (a)-[:RESPONDS_TO*1..10]->(p:Alternative)
WITH a, p
ORDER BY p.depth
WITH a, collect(CASE WHEN p IS NULL THEN null
                     ELSE {id: p.id, kind: 'message', episodeId: p.episodeId,
                           binding: p.binding} END) AS context
RETURN a.id AS id, a.conversationId AS conversationId, a.speaker AS speaker,
       a.content AS content, a.createdAt AS createdAt, a.binding AS binding,
       a.episodeId AS episodeId, context,
       (a:Embedded AND coalesce(a.embeddedRevision, 1) = coalesce(a.revision, 1)) AS embedded
