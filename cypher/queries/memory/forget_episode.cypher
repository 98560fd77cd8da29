// SRCH-4: what Graphiti keeps of a forgotten memory goes too. Its Episode's text is blanked (the
// node stays, so the memory's binding still names it: EPI-1, EPI-3); facts between the Entities
// it mentions that only it supports are deleted, and the others stop citing it; its MENTIONS go,
// and an Entity graphiti-core extracted that no other Episode mentions goes with them (ENT-3). A
// user's Entity stays. Run in the forgetting transaction, and again by the ingestion worker
// after an extraction it finished for a memory forgotten meanwhile. No row: nothing bound.
MATCH (m:Memory {id: $id})-[:HAS_CONTENT]->(e:Episodic)
WHERE m.status = 'archived'
SET e.content = '', e.source_description = 'forgotten', e.forgottenAt = $now
WITH e
CALL (e) {
  MATCH (e)-[:MENTIONS]->(:Entity)-[r:RELATES_TO]-(:Entity)
  WHERE e.uuid IN r.episodes
  WITH DISTINCT r, [x IN r.episodes WHERE x <> e.uuid] AS rest
  FOREACH (_ IN CASE WHEN size(rest) = 0 THEN [1] ELSE [] END | DELETE r)
  FOREACH (_ IN CASE WHEN size(rest) > 0 THEN [1] ELSE [] END | SET r.episodes = rest)
}
CALL (e) {
  MATCH (e)-[mention:MENTIONS]->(n:Entity)
  DELETE mention
  WITH DISTINCT n
  WHERE coalesce(n.source, 'graphiti') = 'graphiti'
    AND NOT EXISTS { MATCH (:Episodic)-[:MENTIONS]->(n) }
  DETACH DELETE n
}
RETURN e.uuid AS id
