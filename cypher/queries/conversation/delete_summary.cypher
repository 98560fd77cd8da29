// Admin delete of a Summary: working memory falls back to the uncompressed path (and the
// upkeep loop may compress again: the Conversation counts as changed). Refused while another
// Summary SUMMARIZES it (SUM-1 would lose a source). Its Episode stays in the knowledge graph.
MATCH (s:Summary {id: $id})
WHERE NOT EXISTS { MATCH (:Summary)-[:SUMMARIZES]->(s) }
OPTIONAL MATCH (c:Conversation {id: s.conversationId})
SET c.updatedAt = $now
WITH s
OPTIONAL MATCH (s)-[r]-()
DELETE r
WITH DISTINCT s
OPTIONAL MATCH (o:IngestItem {id: 'summary:' + s.id})
DELETE o
WITH DISTINCT s
DELETE s
RETURN $id AS id
