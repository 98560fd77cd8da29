// ENT-5: the pairs a merge may join, for Entities Graphiti just extracted ($uuids): each
// (graphiti's own: no `source` of ours) with the user Entities of the owner of the conversation
// or memory group it was extracted in (created by them, or an agent's suggestion they
// confirmed) whose name is the same or contains the other's, ignoring case. Which pairs merge
// is decided on their similarity (domain::knowledge::merge).
UNWIND $uuids AS uuid
MATCH (x:Entity {uuid: uuid})
WHERE x.source IS NULL AND trim(coalesce(x.name, '')) <> ''
OPTIONAL MATCH (c:Conversation {id: coalesce(x.group_id, '')})
WITH x, coalesce(c.ownerId, CASE WHEN x.group_id STARTS WITH 'memory_'
                                 THEN substring(x.group_id, 7) END) AS owner
WHERE owner IS NOT NULL
MATCH (u:Entity {createdBy: owner})
WHERE (u.source = 'user' OR (u.source = 'suggestion' AND u.status = 'confirmed'))
  AND (toLower(u.name) CONTAINS toLower(x.name) OR toLower(x.name) CONTAINS toLower(u.name))
RETURN x.uuid AS extracted, x.name AS extractedName,
       coalesce(x.summary, '') AS extractedSummary, u.uuid AS user, u.name AS userName,
       coalesce(u.summary, '') AS userSummary
LIMIT 200
