// The caller's own Conversations (OWN-2: owner-only), by id after the cursor.
MATCH (c:Conversation)
WHERE c.ownerId = $callerId AND c.id > $after AND ($includeArchived OR c.status = 'active')
RETURN c.id AS id, c.ownerId AS ownerId, c.title AS title, c.status AS status,
       c.defaultProcessId AS defaultProcessId, c.forkedFromId AS forkedFromId,
       c.originTurnId AS originTurnId, c.originAlternativeId AS originAlternativeId,
       c.currentTurnId AS currentTurnId, c.currentAlternativeId AS currentAlternativeId,
       c.turnCount AS turnCount, c.revision AS revision, c.createdAt AS createdAt,
       c.updatedAt AS updatedAt, c.compressionTokenBudget AS compressionTokenBudget,
       c.compressionProcessId AS compressionProcessId
ORDER BY c.id
LIMIT $limit
