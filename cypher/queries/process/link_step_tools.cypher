UNWIND $links AS l
MATCH (st:ProcessStep {id: l.step}), (t:Tool {id: l.target})
CREATE (st)-[:CALLS_TOOL {timeout: l.timeout, interactionMode: l.interactionMode}]->(t)
RETURN count(*) AS n
