MATCH (t:ConversationTurn {id: $turnId})-[:HAS_ALTERNATIVE {isActive: true}]->(a:Alternative)
RETURN a.id AS id, t.conversationId AS conversationId
