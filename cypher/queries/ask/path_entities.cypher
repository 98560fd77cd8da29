// The Entities that a Conversation's active path mentions (through each Alternative's Episode),
// with how many Alternatives on the path mention each.
MATCH (c:Conversation {id: $conversationId})
MATCH (cur:Alternative {id: c.currentAlternativeId})-[:RESPONDS_TO*0..1000]->(a:Alternative)
MATCH (a)-[:HAS_CONTENT]->(:Episodic)-[:MENTIONS]->(e:Entity)
RETURN e.uuid AS uuid, e.name AS name, count(DISTINCT a) AS mentions
ORDER BY mentions DESC, name
