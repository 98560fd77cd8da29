MATCH (:Conversation {id: $conversationId})-[h:HAS_ACTIVE_ENTITY]->(n:Entity {uuid: $uuid})
DELETE h
RETURN n.uuid AS id
