// The search warm-up's questions (App::warm_recall): up to $n embedded messages, each with its
// conversation and that conversation's owner. The warm-up searches as that owner for the
// message, so that rows pass the owner's filter and the code after it runs while Neo4j's JIT
// compiles it; the answers are discarded.
MATCH (x:Alternative:Embedded)
WHERE x.content IS NOT NULL
MATCH (c:Conversation {id: x.conversationId})
WHERE c.ownerId IS NOT NULL
WITH x, c
LIMIT $n
RETURN c.ownerId AS ownerId, c.id AS conversationId, left(x.content, 300) AS text
