// A built-in MetricDefinition, created once by id when the engine starts. A name an
// admin's definition already took in the scope keeps it (MET-1): the built-in is then left out.
OPTIONAL MATCH (taken:MetricDefinition {nameKey: $nameKey})
WITH taken
WHERE taken IS NULL OR taken.id = $id
MERGE (d:MetricDefinition {id: $id})
ON CREATE SET d.name = $name, d.nameKey = $nameKey, d.description = $description,
              d.scope = $scope, d.aggregation = $aggregation, d.dataType = $dataType,
              d.retentionDays = $retentionDays, d.revision = 1, d.createdAt = $now,
              d.updatedAt = $now, d.createdBy = $by, d.builtin = true
RETURN d.id AS id
