MATCH (:Process {id: $processId})-[:HAS_VERSION]->(:ProcessVersion)-[:HAS_STEP]->(st:ProcessStep)
DETACH DELETE st
