// The Entities a caller may see: their own, and those of the given conversations (extracted in
// their group, or put in them as active entities), optionally filtered by name.
MATCH (n:Entity)
WHERE (n.createdBy = $caller OR n.groupId IN $conversationIds)
  AND ($q IS NULL OR toLower(n.name) CONTAINS toLower($q))
RETURN n.uuid AS uuid
UNION
MATCH (c:Conversation)-[:HAS_ACTIVE_ENTITY]->(n:Entity)
WHERE c.id IN $conversationIds AND ($q IS NULL OR toLower(n.name) CONTAINS toLower($q))
RETURN n.uuid AS uuid
