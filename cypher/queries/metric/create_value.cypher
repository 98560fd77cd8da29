// POST /v1/metric-values: appended, never changed (MET-1), linked to its definition and to
// the entity it measures.
MATCH (d:MetricDefinition {id: $metricId})
MATCH (e:__LABEL__ {id: $entityId})
CREATE (v:MetricValue {id: $id, metricId: $metricId, entityId: $entityId, value: $value,
                       number: $number, at: $at, timestamp: $timestamp,
                       dimensions: $dimensions, createdAt: $now, createdBy: $by})
CREATE (v)-[:OF_METRIC]->(d)
CREATE (v)-[:MEASURES]->(e)
RETURN v.id AS id
