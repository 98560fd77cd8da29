// The engine's built-in measurements for one scope, one statement per interval:
// appended like any value (MET-1), for entities that still exist and definitions still there.
UNWIND $values AS v
MATCH (d:MetricDefinition {id: v.metricId})
MATCH (e:__LABEL__ {id: v.entityId})
CREATE (m:MetricValue {id: v.id, metricId: v.metricId, entityId: v.entityId, value: v.value,
                       number: v.number, at: v.at, timestamp: v.timestamp,
                       dimensions: v.dimensions, createdAt: v.timestamp, createdBy: 'system'})
CREATE (m)-[:OF_METRIC]->(d)
CREATE (m)-[:MEASURES]->(e)
RETURN count(m) AS written
