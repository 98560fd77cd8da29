// The search warm-up's questions (App::warm_recall): up to $n embedded messages, each with its
// conversation and that conversation's owner. The warm-up searches as that owner for the
// message, so that rows pass the owner's filter and the code after it runs while Neo4j's JIT
// compiles it; the answers are discarded. Neo4j plans a statement apart for a parameter of
// another size, so owners whose ids differ in length come first, in turn: one of each length,
// then a second of each, and so on, among the first $scan embedded messages.
MATCH (x:Alternative:Embedded)
WHERE x.content IS NOT NULL
WITH x
LIMIT $scan
MATCH (c:Conversation {id: x.conversationId})
WHERE c.ownerId IS NOT NULL
WITH size(c.ownerId) AS length, collect({x: x, c: c})[..$n] AS found
UNWIND range(0, size(found) - 1) AS i
WITH i, length, found[i] AS q
ORDER BY i, length
LIMIT $n
RETURN q.c.ownerId AS ownerId, q.c.id AS conversationId, left(q.x.content, 300) AS text
