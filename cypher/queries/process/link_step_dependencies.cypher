UNWIND $links AS l
MATCH (a:ProcessStep {id: l.step}), (b:ProcessStep {id: l.target})
CREATE (a)-[:DEPENDS_ON {order: l.order}]->(b)
