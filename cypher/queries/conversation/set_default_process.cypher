// CONV-2: DEFAULT_PROCESS points at $processId (or nowhere when null); idempotent, so a repeat
// of the same choice changes nothing, not even `since`.
MATCH (c:Conversation {id: $id})
OPTIONAL MATCH (c)-[d:DEFAULT_PROCESS]->(old:Process)
WITH c, collect(d) AS ds, collect(old.id) AS olds
WHERE $processId IS NULL OR olds <> [$processId]
FOREACH (d IN ds | DELETE d)
SET c.defaultProcessId = $processId
WITH c
OPTIONAL MATCH (p:Process {id: coalesce($processId, '')})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END |
  CREATE (c)-[:DEFAULT_PROCESS {since: $now}]->(p))
RETURN c.id AS id
