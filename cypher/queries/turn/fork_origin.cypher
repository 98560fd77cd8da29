MATCH (c:Conversation {id: $id}), (o:Conversation {id: $originId})
CREATE (c)-[:FORKED_FROM {originTurn: $originTurnId, originAlternative: $originAlternativeId,
                          createdAt: $now}]->(o)
SET c.turnCount = $turnCount, c.currentTurnId = $currentTurnId,
    c.currentAlternativeId = $currentAlternativeId
RETURN c.id AS id
