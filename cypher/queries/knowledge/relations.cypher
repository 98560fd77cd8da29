// The facts Graphiti extracted between mirrored Entities (RELATES_TO, keyed by its uuid).
UNWIND $edges AS r
MATCH (s:Entity {uuid: r.source}), (t:Entity {uuid: r.target})
MERGE (s)-[rel:RELATES_TO {uuid: r.uuid}]->(t)
  ON CREATE SET rel.name = r.name, rel.fact = r.fact, rel.group_id = $groupId
RETURN count(rel) AS n
