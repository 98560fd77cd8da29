// ENT-5: the extracted Entity $merged becomes one with the user's Entity $survivor, whose uuid,
// name and summary stay (the user's name first). Every relationship of the merged node moves to
// the survivor with its type and properties (MENTIONS, so every source is kept; RELATES_TO
// facts, whose `source_node_uuid` / `target_node_uuid` then name the survivor;
// HAS_ACTIVE_ENTITY; whatever else points at it), except one that would double an edge of the
// same type the survivor already has with that node (a fact between the same two Entities is
// never a double: each is its own). The merged node stays as a tombstone without edges
// (`MergedEntity`, `mergedInto`), so a reference to its uuid can be resolved; the survivor lists
// it in `mergedFrom` and keeps its name among `aliases` when it differs.
MATCH (s:Entity {uuid: $survivor})
MATCH (m:Entity {uuid: $merged})
WHERE s <> m AND m.source IS NULL
CALL {
  WITH s, m
  MATCH (m)-[r]->(o)
  WITH s, m, r, CASE WHEN o = m THEN s ELSE o END AS to
  WITH s, m, r, to, type(r) <> 'RELATES_TO'
       AND EXISTS { MATCH (s)-[x]->(to) WHERE type(x) = type(r) } AS twin
  CALL {
    WITH s, m, r, to, twin
    WITH s, m, r, to
    WHERE NOT twin
    CREATE (s)-[moved:$(type(r))]->(to)
    SET moved = properties(r)
    SET moved.source_node_uuid = CASE WHEN moved.source_node_uuid = m.uuid THEN s.uuid
                                      ELSE moved.source_node_uuid END,
        moved.target_node_uuid = CASE WHEN moved.target_node_uuid = m.uuid THEN s.uuid
                                      ELSE moved.target_node_uuid END
  }
  DELETE r
  RETURN count(*) AS outgoing
}
CALL {
  WITH s, m
  MATCH (o)-[r]->(m)
  WITH s, m, o, r, type(r) <> 'RELATES_TO'
       AND EXISTS { MATCH (o)-[x]->(s) WHERE type(x) = type(r) } AS twin
  CALL {
    WITH s, m, o, r, twin
    WITH s, m, o, r
    WHERE NOT twin
    CREATE (o)-[moved:$(type(r))]->(s)
    SET moved = properties(r)
    SET moved.source_node_uuid = CASE WHEN moved.source_node_uuid = m.uuid THEN s.uuid
                                      ELSE moved.source_node_uuid END,
        moved.target_node_uuid = CASE WHEN moved.target_node_uuid = m.uuid THEN s.uuid
                                      ELSE moved.target_node_uuid END
  }
  DELETE r
  RETURN count(*) AS incoming
}
SET s.mergedFrom = coalesce(s.mergedFrom, []) + m.uuid,
    s.aliases = CASE WHEN toLower(m.name) = toLower(s.name)
                       OR m.name IN coalesce(s.aliases, []) THEN s.aliases
                     ELSE coalesce(s.aliases, []) + m.name END,
    s.name_embedding = coalesce(s.name_embedding, m.name_embedding),
    s.mergedAt = $now
SET m:MergedEntity, m.mergedInto = s.uuid, m.mergedAt = $now, m.similarity = $similarity
REMOVE m:Entity
RETURN s.uuid AS id, outgoing + incoming AS moved
