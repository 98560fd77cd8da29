// Working memory's conversation read: the Conversation (the columns of `get.cypher`) and the
// message its retrieved context searches for, the given Alternative's text, else the current
// one's: one statement where there were two (each costs Neo4j about 1.7 ms of CPU).
MATCH (c:Conversation {id: $id})
OPTIONAL MATCH (m:Alternative {id: coalesce($alternativeId, c.currentAlternativeId)})
RETURN c {.id, .ownerId, .title, .status, .defaultProcessId, .forkedFromId, .originTurnId,
          .originAlternativeId, .currentTurnId, .currentAlternativeId, .turnCount, .revision,
          .createdAt, .updatedAt, .compressionTokenBudget, .compressionProcessId} AS conversation,
       m {.id, .content, .conversationId} AS message
