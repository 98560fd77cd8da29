// Extraction finished (or was skipped): the binding's final state, its outbox item gone, and
// what Graphiti extracted mirrored by uuid — (:Episodic)-[:MENTIONS]->(:Entity). An Entity
// Graphiti refined keeps its uuid and takes the new name and summary; its provenance is its
// MENTIONS edges.
MATCH (x:__LABEL__ {id: $id})-[:HAS_CONTENT]->(e:Episodic {uuid: $uuid})
SET x.binding = $binding, x.extractedAt = $now, x.bindingError = null
WITH e
OPTIONAL MATCH (o:IngestItem {id: $itemId})
DELETE o
WITH DISTINCT e
UNWIND $entities AS en
MERGE (n:Entity {uuid: en.uuid})
  ON CREATE SET n.name = en.name, n.summary = en.summary, n.labels = en.labels,
                n.category = en.category, n.groupId = $groupId, n.source = 'graphiti',
                n.createdAt = $now
  ON MATCH SET n.name = en.name, n.summary = coalesce(en.summary, n.summary)
MERGE (e)-[m:MENTIONS]->(n)
  ON CREATE SET m.createdAt = $now
RETURN count(n) AS n
