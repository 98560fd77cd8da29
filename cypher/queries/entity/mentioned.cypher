// The Entities mentioned by the Episodes bound to the given path Alternatives, with the depth
// of each mention (working memory's activeEntities beyond the chosen ones).
UNWIND $path AS p
MATCH (:Alternative {id: p.id})-[:HAS_CONTENT]->(:Episodic)-[m:MENTIONS]->(n:Entity)
OPTIONAL MATCH (n)-[r:RELATES_TO]-(:Entity)
WITH p, m, n, collect(r.fact) AS facts
RETURN n.uuid AS uuid, n.name AS name, n.summary AS summary, n.category AS category,
       n.facets AS facets, n.source AS source, facts, p.sequence AS sequence,
       coalesce(m.createdAt, '') AS mentionedAt
