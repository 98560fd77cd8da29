// WM-2, WM-3: what working memory takes from its Conversation alone, in one statement (each
// statement costs Neo4j about 1.7 ms of CPU whatever it reads; these were three): its
// Summaries (by creation), its chosen entities with their flags and relationship facts (by when
// they were chosen) and its owner's introspection carousel (user-scoped, by position). The
// columns are those of summaries.cypher and entity/active.cypher: change them together.
MATCH (c:Conversation {id: $conversationId})
RETURN
  COLLECT {
    MATCH (s:Summary {conversationId: c.id})
    RETURN s {.id, .conversationId, .content, .coversUpToTurnId, .compressionLevel, .tokenCount,
              .sources, .alternativeSources, .summarySources, .createdByProcessId, .runId,
              .createdAt, .episodeId, .binding, revision: coalesce(s.revision, 1)}
    ORDER BY s.createdAt, s.id
  } AS summaries,
  COLLECT {
    MATCH (c)-[h:HAS_ACTIVE_ENTITY]->(n:Entity)
    OPTIONAL MATCH (n)-[r:RELATES_TO]-(:Entity)
    WITH h, n, collect(r.fact) AS facts
    RETURN {uuid: n.uuid, name: n.name, summary: n.summary,
            category: coalesce(n.category, head([l IN labels(n) WHERE l <> 'Entity'])),
            facets: n.facets, source: coalesce(n.source, 'graphiti'), facts: facts,
            addedAt: h.addedAt, includeSummary: h.includeSummary,
            includeFacets: h.includeFacets, includeRelationships: h.includeRelationships}
    ORDER BY h.addedAt, n.uuid
  } AS chosen,
  COLLECT {
    MATCH (i:Introspection {ownerId: c.ownerId})
    WHERE i.status = 'current'
    RETURN i {.id, .carouselPosition, .content, .episodeId, .binding, .conversationContext,
              .createdAt, .archivedAt, .revision, .runId}
    ORDER BY i.carouselPosition
  } AS notes
