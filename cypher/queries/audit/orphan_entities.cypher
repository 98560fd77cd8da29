// ENT-3: an Entity mirrored from Graphiti is mentioned by the Episode it was extracted from.
MATCH (n:Entity {source: 'graphiti'})
WHERE NOT EXISTS { MATCH (:Episodic)-[:MENTIONS]->(n) }
RETURN n.uuid AS id
