MATCH (d:MetricDefinition)
WHERE d.id > $after
RETURN d.id AS id, d.name AS name, d.description AS description, d.scope AS scope,
       d.aggregation AS aggregation, d.dataType AS dataType, d.retentionDays AS retentionDays,
       d.revision AS revision, d.createdAt AS createdAt, d.updatedAt AS updatedAt
ORDER BY d.id
LIMIT $limit
