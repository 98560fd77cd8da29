// What the ingestion worker needs of an Introspection note: its content and binding. Its
// Episode's group is `system_introspection`, apart from every conversation's, and a correction
// (revision > 1) is a new Episode.
MATCH (i:Introspection {id: $id})
RETURN i.id AS id, 'system_introspection' AS conversationId, null AS speaker,
       i.content AS content, coalesce(i.correctedAt, i.createdAt) AS createdAt,
       i.binding AS binding, i.episodeId AS episodeId, [] AS context, i.revision AS revision,
       (i:Embedded AND coalesce(i.embeddedRevision, 1) = coalesce(i.revision, 1)) AS embedded
