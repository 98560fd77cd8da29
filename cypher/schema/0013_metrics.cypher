// MetricDefinition / MetricValue. `nameKey` (scope + lower-cased name) is unique:
// names are unique within a scope (MET-1) even under concurrent creates. Values are looked up
// by their definition.
CREATE CONSTRAINT metric_definition_id IF NOT EXISTS FOR (n:MetricDefinition) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT metric_definition_name IF NOT EXISTS FOR (n:MetricDefinition) REQUIRE n.nameKey IS UNIQUE;
CREATE CONSTRAINT metric_value_id IF NOT EXISTS FOR (n:MetricValue) REQUIRE n.id IS UNIQUE;
CREATE INDEX metric_value_metric IF NOT EXISTS FOR (n:MetricValue) ON (n.metricId)
