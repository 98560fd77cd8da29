// GRAPH-1 / GRAPH-2: an Alternative or Summary that names a run (`runId`) has exactly one
// GENERATED_BY, to that run; one that names none has none.
MATCH (n:__LABEL__)
OPTIONAL MATCH (n)-[:GENERATED_BY]->(r:Run)
WITH n, collect(r.id) AS runs
WHERE (n.runId IS NULL AND size(runs) <> 0)
   OR (n.runId IS NOT NULL AND (size(runs) <> 1 OR NOT n.runId IN runs))
RETURN n.id AS id
