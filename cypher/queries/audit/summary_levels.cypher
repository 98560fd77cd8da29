// SUM-1: a Summary summarizes at least one source, its level is one above its deepest
// source's (Alternatives and Episodes are level 0), and it COVERS_UP_TO exactly one Turn of its
// Conversation; one made by a compression run covers up to the Turn of its deepest Alternative
// source (MEM-6: the span it stands in for, no more, no less).
MATCH (s:Summary)
OPTIONAL MATCH (s)-[:SUMMARIZES]->(src)
WITH s, count(src) AS sources,
     max(CASE WHEN src:Summary THEN src.compressionLevel ELSE 0 END) AS deepest,
     max(CASE WHEN src:Alternative THEN src.depth ELSE null END) AS lastDepth
OPTIONAL MATCH (s)-[:COVERS_UP_TO]->(t:ConversationTurn)
WITH s, sources, deepest, lastDepth, collect(t) AS covered
OPTIONAL MATCH (s)-[:GENERATED_BY]->(r:Run {triggerKind: 'compression'})
WITH s, sources, deepest, lastDepth, covered, count(r) > 0 AS compressed
WHERE sources = 0 OR s.compressionLevel <> deepest + 1 OR size(covered) <> 1
   OR covered[0].conversationId <> s.conversationId
   OR (compressed AND lastDepth IS NOT NULL AND covered[0].sequence <> lastDepth)
RETURN s.id AS id
