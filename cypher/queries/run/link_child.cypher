MATCH (sr:StepRun {id: $stepRunId}), (child:Run {id: $childRunId})
MERGE (sr)-[:SPAWNED]->(child)
RETURN child.id AS id
