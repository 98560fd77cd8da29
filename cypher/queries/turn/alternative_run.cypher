// FORK-1's source: the run that generated one Alternative of a Turn. Read without locks: an
// Alternative's runId is written when it is created and never changes, and a regenerate takes
// its Conversation's lock later in its transaction, so it must not take the Alternatives'
// locks first (the tree takes the Conversation's, then theirs: conversation/tree.cypher).
MATCH (:ConversationTurn {id: $turnId})-[:HAS_ALTERNATIVE]->(a:Alternative {id: $alternativeId})
WHERE a.runId IS NOT NULL
RETURN a.runId AS id
