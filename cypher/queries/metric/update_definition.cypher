// PATCH /v1/metric-definitions/{id}: the whole new state, decided on `expectedRevision`.
MATCH (d:MetricDefinition {id: $id})
WHERE d.revision = $expectedRevision
SET d.name = $name, d.nameKey = $nameKey, d.description = $description,
    d.aggregation = $aggregation, d.retentionDays = $retentionDays,
    d.revision = d.revision + 1, d.updatedAt = $now, d.updatedBy = $by
RETURN d.id AS id
