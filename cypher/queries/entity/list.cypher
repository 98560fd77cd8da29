// The Entities a caller may see: their own, and those of the given conversations (extracted in
// their group: graphiti's `group_id`, or put in them as active entities), optionally filtered by
// name.
MATCH (n:Entity)
WHERE n.createdBy = $caller AND ($q IS NULL OR toLower(n.name) CONTAINS toLower($q))
RETURN n.uuid AS uuid
UNION
MATCH (n:Entity)
WHERE n.group_id IN $conversationIds AND ($q IS NULL OR toLower(n.name) CONTAINS toLower($q))
RETURN n.uuid AS uuid
UNION
MATCH (c:Conversation)-[:HAS_ACTIVE_ENTITY]->(n:Entity)
WHERE c.id IN $conversationIds AND ($q IS NULL OR toLower(n.name) CONTAINS toLower($q))
RETURN n.uuid AS uuid
