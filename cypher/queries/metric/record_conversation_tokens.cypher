// Conversation tokens: counted by the agent Alternative that used them, written to
// the Conversation that Alternative's Turn belongs to.
UNWIND $values AS v
MATCH (d:MetricDefinition {id: v.metricId})
MATCH (:Alternative {id: v.entityId})<-[:HAS_ALTERNATIVE]-(t:Turn)
MATCH (e:Conversation {id: t.conversationId})
CREATE (m:MetricValue {id: v.id, metricId: v.metricId, entityId: e.id, value: v.value,
                       number: v.number, at: v.at, timestamp: v.timestamp,
                       dimensions: v.dimensions, createdAt: v.timestamp, createdBy: 'system'})
CREATE (m)-[:OF_METRIC]->(d)
CREATE (m)-[:MEASURES]->(e)
RETURN count(m) AS written
