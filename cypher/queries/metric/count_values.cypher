MATCH (v:MetricValue {metricId: $id})
RETURN count(v) AS n
