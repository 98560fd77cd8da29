// GET /v1/metric-values: newest first by id (UUIDv7: append order), in [from, to).
// $entityId: null only for an admin (a user reads the values of an entity they may see).
MATCH (v:MetricValue {metricId: $metricId})
WHERE ($entityId IS NULL OR v.entityId = $entityId)
  AND v.at >= $from AND v.at < $to
  AND ($before = '' OR v.id < $before)
RETURN v.id AS id, v.metricId AS metricId, v.entityId AS entityId, v.value AS value,
       v.number AS number, v.at AS at, v.timestamp AS timestamp, v.dimensions AS dimensions,
       v.createdAt AS createdAt
ORDER BY v.id DESC
LIMIT $limit
