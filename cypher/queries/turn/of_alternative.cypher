// The Turn an Alternative belongs to (`GET /v1/alternatives/{id}`): one edge from the
// Alternative, whatever its depth (its path, read before, grew with the conversation).
MATCH (t:ConversationTurn)-[:HAS_ALTERNATIVE]->(:Alternative {id: $alternativeId})
RETURN t.id AS id
