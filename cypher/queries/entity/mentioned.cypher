// The Entities mentioned by the Episodes bound to the given path Alternatives, with the depth
// of each mention (working memory's activeEntities beyond the chosen ones). The Episodes, the
// Entities and MENTIONS are graphiti-core's own (docs/knowledge.md).
UNWIND $path AS p
MATCH (:Alternative {id: p.id})-[:HAS_CONTENT]->(:Episodic)-[m:MENTIONS]->(n:Entity)
OPTIONAL MATCH (n)-[r:RELATES_TO]-(:Entity)
WITH p, m, n, collect(r.fact) AS facts
RETURN n.uuid AS uuid, n.name AS name, n.summary AS summary,
       coalesce(n.category, head([l IN labels(n) WHERE l <> 'Entity'])) AS category,
       n.facets AS facets, coalesce(n.source, 'graphiti') AS source, facts,
       p.sequence AS sequence,
       coalesce(m.createdAt, toString(m.created_at), '') AS mentionedAt
