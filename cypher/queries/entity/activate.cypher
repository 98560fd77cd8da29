// Adds (or re-flags) an Entity among a Conversation's active entities (HAS_ACTIVE_ENTITY).
MATCH (c:Conversation {id: $conversationId}), (n:Entity {uuid: $uuid})
MERGE (c)-[h:HAS_ACTIVE_ENTITY]->(n)
  ON CREATE SET h.addedAt = $now, h.addedBy = $caller
SET h.includeSummary = $includeSummary, h.includeFacets = $includeFacets,
    h.includeRelationships = $includeRelationships
RETURN n.uuid AS id
