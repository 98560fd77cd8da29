// ENT-4: an enrichment adds `enrichment`, facets (merged, add-only), `enrichedAt` and
// `enrichedBy`; it never touches name, sources or MENTIONS. Once per Entity.
MATCH (n:Entity {uuid: $uuid})
WHERE n.enrichedAt IS NULL
SET n.enrichment = $enrichment, n.facets = $facets, n.enrichedAt = $now,
    n.enrichedBy = $processId, n.enrichmentRunId = $runId
RETURN n.uuid AS id
