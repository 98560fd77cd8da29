// TURN-1: one HAS_TURN from the Turn's own Conversation, sequence = depth (root 1, child =
// parent + 1) on both the edge and the node.
MATCH (t:ConversationTurn)
OPTIONAL MATCH (c:Conversation)-[h:HAS_TURN]->(t)
WITH t, count(c) AS owners, collect(h.sequence) AS seqs, collect(c.id) AS convs
OPTIONAL MATCH (t)-[:CHILD_OF]->(p:ConversationTurn)
WITH t, owners, seqs, convs, collect(p.sequence) AS parentSeqs
WHERE owners <> 1 OR seqs <> [t.sequence] OR convs <> [t.conversationId]
   OR (size(parentSeqs) = 0 AND t.sequence <> 1)
   OR (size(parentSeqs) = 1 AND t.sequence <> parentSeqs[0] + 1)
RETURN t.id AS id
