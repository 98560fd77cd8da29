// MET-4: values older than their definition's retention, a bounded batch per statement.
MATCH (d:MetricDefinition)
WHERE d.retentionDays IS NOT NULL
MATCH (v:MetricValue {metricId: d.id})
WHERE v.at < $nowMs - d.retentionDays * 86400000
WITH v
LIMIT $limit
DETACH DELETE v
RETURN count(*) AS n
