// ENT-5: the pairs a merge may join, for a user Entity just created or confirmed ($uuid): it with
// the Entities Graphiti extracted in its owner's conversations or memory group whose name is
// the same or contains the other's, ignoring case.
MATCH (u:Entity {uuid: $uuid})
WHERE u.createdBy IS NOT NULL AND trim(coalesce(u.name, '')) <> ''
CALL {
  WITH u
  MATCH (c:Conversation {ownerId: u.createdBy})
  MATCH (x:Entity {group_id: c.id})
  RETURN x
  UNION
  WITH u
  MATCH (x:Entity {group_id: 'memory_' + u.createdBy})
  RETURN x
}
WITH u, x
WHERE x.source IS NULL
  AND (toLower(u.name) CONTAINS toLower(x.name) OR toLower(x.name) CONTAINS toLower(u.name))
RETURN x.uuid AS extracted, x.name AS extractedName,
       coalesce(x.summary, '') AS extractedSummary, u.uuid AS user, u.name AS userName,
       coalesce(u.summary, '') AS userSummary
LIMIT 200
