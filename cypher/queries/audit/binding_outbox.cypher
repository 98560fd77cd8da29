// EPI-3: nothing to ingest is ever lost: content without a binding, or a binding that is not
// final ($notFinal) without its outbox item, is a violation.
MATCH (x:Alternative)
WHERE (x.binding IS NULL AND x.content IS NOT NULL AND trim(x.content) <> '')
   OR x.binding IN $notFinal
OPTIONAL MATCH (o:IngestItem {id: 'message:' + x.id})
WITH x, o
WHERE x.binding IS NULL OR o IS NULL
RETURN x.id AS id
UNION
MATCH (x:Summary)
WHERE x.binding IS NULL OR x.binding IN $notFinal
OPTIONAL MATCH (o:IngestItem {id: 'summary:' + x.id})
WITH x, o
WHERE x.binding IS NULL OR o IS NULL
RETURN x.id AS id
UNION
MATCH (x:Memory)
WHERE x.binding IS NULL OR x.binding IN $notFinal
OPTIONAL MATCH (o:IngestItem {id: 'memory:' + x.id})
WITH x, o
WHERE x.status = 'current' AND (x.binding IS NULL OR o IS NULL)
RETURN x.id AS id
