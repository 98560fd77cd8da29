// DELETE /v1/metric-definitions/{id} (MET-2: with its values only when cascading; decided
// before, in the same transaction).
MATCH (d:MetricDefinition {id: $id})
OPTIONAL MATCH (v:MetricValue {metricId: $id})
DETACH DELETE v
WITH DISTINCT d
DETACH DELETE d
RETURN $id AS id
