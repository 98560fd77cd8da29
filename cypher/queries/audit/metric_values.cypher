// MET-1 / MET-4 (audit): a value without its definition, or one that outlived its definition's
// retention by more than a day (the sweep runs every minute). A deleted entity's values stay
// as history, so the measured entity is checked when a value is written, not here.
MATCH (v:MetricValue)
OPTIONAL MATCH (v)-[:OF_METRIC]->(d:MetricDefinition)
WITH v, d
WHERE d IS NULL OR d.id <> v.metricId
   OR (d.retentionDays IS NOT NULL AND v.at < $nowMs - (d.retentionDays + 1) * 86400000)
RETURN v.id AS id, CASE WHEN d IS NULL OR d.id <> v.metricId THEN 'MET-1' ELSE 'MET-4' END AS rule
