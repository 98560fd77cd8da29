// The ids of a user's Conversations (what their entity listing may draw from).
MATCH (c:Conversation {ownerId: $callerId})
RETURN c.id AS id
