MATCH (st:ProcessStep)-[:CALLS_TOOL]->(:Tool {id: $id})
RETURN count(st) AS n
