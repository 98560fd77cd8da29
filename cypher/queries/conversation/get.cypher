// One Conversation. Working memory reads the same columns in get_with_message.cypher.
MATCH (c:Conversation {id: $id})
RETURN c.id AS id, c.ownerId AS ownerId, c.title AS title, c.status AS status,
       c.defaultProcessId AS defaultProcessId, c.forkedFromId AS forkedFromId,
       c.originTurnId AS originTurnId, c.originAlternativeId AS originAlternativeId,
       c.currentTurnId AS currentTurnId, c.currentAlternativeId AS currentAlternativeId,
       c.turnCount AS turnCount, c.revision AS revision, c.createdAt AS createdAt,
       c.updatedAt AS updatedAt, c.compressionTokenBudget AS compressionTokenBudget,
       c.compressionProcessId AS compressionProcessId
