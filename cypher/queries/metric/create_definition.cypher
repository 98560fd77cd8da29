// POST /v1/metric-definitions (MET-1: `nameKey` unique, MET-3 checked before).
CREATE (d:MetricDefinition {id: $id, name: $name, nameKey: $nameKey, description: $description,
                            scope: $scope, aggregation: $aggregation, dataType: $dataType,
                            retentionDays: $retentionDays, revision: 1, createdAt: $now,
                            updatedAt: $now, createdBy: $by})
RETURN d.id AS id
