// Memory upkeep. One settings node; one claim per loop subject (MEM-6: never two
// compressions of a conversation, introspections of a user or enrichments of an Entity at
// once, across API instances); per-conversation counters; the introspection carousel, where
// `slotKey` (`ownerId#position` while current, `archived:id` after) makes two notes in one
// position impossible (INT-1).
CREATE CONSTRAINT memory_settings_id IF NOT EXISTS FOR (n:MemorySettings) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT upkeep_claim_key IF NOT EXISTS FOR (n:UpkeepClaim) REQUIRE n.key IS UNIQUE;
CREATE CONSTRAINT memory_upkeep_conversation IF NOT EXISTS FOR (n:MemoryUpkeep) REQUIRE n.conversationId IS UNIQUE;
CREATE CONSTRAINT introspection_id IF NOT EXISTS FOR (n:Introspection) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT introspection_slot IF NOT EXISTS FOR (n:Introspection) REQUIRE n.slotKey IS UNIQUE;
CREATE INDEX introspection_owner IF NOT EXISTS FOR (n:Introspection) ON (n.ownerId);
CREATE INDEX conversation_updated IF NOT EXISTS FOR (n:Conversation) ON (n.updatedAt);
CREATE INDEX memory_upkeep_retry IF NOT EXISTS FOR (n:MemoryUpkeep) ON (n.retryAt);
CREATE INDEX entity_enriched IF NOT EXISTS FOR (n:Entity) ON (n.enrichedAt)
