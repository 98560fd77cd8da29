// ENT-3: an Entity Graphiti extracted (graphiti-core's own node: no `source` of ours) is
// mentioned by the Episode it was extracted from. graphiti-core writes the Entity and its
// MENTIONS in one transaction.
MATCH (n:Entity)
WHERE coalesce(n.source, 'graphiti') = 'graphiti'
  AND NOT EXISTS { MATCH (:Episodic)-[:MENTIONS]->(n) }
RETURN n.uuid AS id
