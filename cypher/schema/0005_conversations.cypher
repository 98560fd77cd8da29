// Conversations: Conversation, ConversationTurn, Alternative and Summary nodes.
// Structural facts that never change (a Turn's conversation, depth and parent, an Alternative's
// Turn and the Alternative it responds to) are kept as properties beside their edges, so reads
// are index lookups, and `aiden check` audits that the two agree. `Alternative.seqKey` =
// `turnId#sequence` makes a duplicated sequence within a Turn impossible to commit.
CREATE CONSTRAINT conversation_id IF NOT EXISTS FOR (n:Conversation) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT conversation_turn_id IF NOT EXISTS FOR (n:ConversationTurn) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT alternative_id IF NOT EXISTS FOR (n:Alternative) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT alternative_seq_key IF NOT EXISTS FOR (n:Alternative) REQUIRE n.seqKey IS UNIQUE;
CREATE CONSTRAINT summary_id IF NOT EXISTS FOR (n:Summary) REQUIRE n.id IS UNIQUE;
CREATE INDEX conversation_owner IF NOT EXISTS FOR (n:Conversation) ON (n.ownerId);
CREATE INDEX conversation_turn_conversation IF NOT EXISTS FOR (n:ConversationTurn) ON (n.conversationId);
CREATE INDEX alternative_conversation IF NOT EXISTS FOR (n:Alternative) ON (n.conversationId);
CREATE INDEX alternative_run IF NOT EXISTS FOR (n:Alternative) ON (n.runId);
CREATE INDEX summary_conversation IF NOT EXISTS FOR (n:Summary) ON (n.conversationId)
