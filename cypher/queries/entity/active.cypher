// A Conversation's chosen entities with their flags and relationship facts (its entities'
// list). Working memory reads the same columns in conversation/memory_notes.cypher: change both.
MATCH (:Conversation {id: $conversationId})-[h:HAS_ACTIVE_ENTITY]->(n:Entity)
OPTIONAL MATCH (n)-[r:RELATES_TO]-(:Entity)
WITH h, n, collect(r.fact) AS facts
RETURN n.uuid AS uuid, n.name AS name, n.summary AS summary,
       coalesce(n.category, head([l IN labels(n) WHERE l <> 'Entity'])) AS category,
       n.facets AS facets, coalesce(n.source, 'graphiti') AS source, facts, h.addedAt AS addedAt,
       h.includeSummary AS includeSummary, h.includeFacets AS includeFacets,
       h.includeRelationships AS includeRelationships
ORDER BY h.addedAt, n.uuid
