// MET-1: another definition of the scope already has this name.
MATCH (d:MetricDefinition {nameKey: $nameKey})
WHERE d.id <> $id
RETURN count(d) AS n
