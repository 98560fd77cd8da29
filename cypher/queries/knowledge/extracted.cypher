// Extraction finished (or was skipped): the binding's final state and its outbox item gone.
// What Graphiti extracted is already in this graph, written by graphiti-core itself in the
// transaction that saved the Episode: its Entity nodes, (:Episodic)-[:MENTIONS]->(:Entity) and
// the RELATES_TO facts, each keyed by Graphiti's uuid. Nothing of it is copied here (graphiti's
// saves `SET n = {...}` its own nodes, so we keep no properties of ours on them); this counts
// which of the Entities and facts Graphiti answered with are there, so that a service writing
// to another graph is noticed. No row: the target is not bound to this Episode.
MATCH (x:__LABEL__ {id: $id})-[:HAS_CONTENT]->(e:Episodic {uuid: $uuid})
SET x.binding = $binding, x.extractedAt = $now, x.bindingError = null
WITH e
OPTIONAL MATCH (o:IngestItem {id: $itemId})
DELETE o
WITH DISTINCT e
OPTIONAL MATCH (e)-[:MENTIONS]->(n:Entity)
WHERE n.uuid IN $entityUuids
WITH e, count(DISTINCT n) AS entities
OPTIONAL MATCH (:Entity)-[r:RELATES_TO]->(:Entity)
WHERE r.uuid IN $edgeUuids
RETURN entities, count(DISTINCT r) AS edges
