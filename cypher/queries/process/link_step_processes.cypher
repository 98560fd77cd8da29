UNWIND $links AS l
MATCH (st:ProcessStep {id: l.step}), (p:Process {id: l.target})
CREATE (st)-[:CALLS_PROCESS {timeout: l.timeout}]->(p)
RETURN count(*) AS n
