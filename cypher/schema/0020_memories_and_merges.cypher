// Memories (SRCH-4): what a user asked to keep ("remember that …"), owned by them, ingested
// into Graphiti in their own group and found by recall like any content (the recall_embedding
// vector index covers them once `Embedded`; their words have a full-text index of their own,
// so recall_content need not be rebuilt).
CREATE CONSTRAINT memory_id IF NOT EXISTS FOR (m:Memory) REQUIRE m.id IS UNIQUE;
CREATE INDEX memory_owner IF NOT EXISTS FOR (m:Memory) ON (m.ownerId);
CREATE FULLTEXT INDEX memory_content IF NOT EXISTS
FOR (n:Memory) ON EACH [n.content]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}};
// Entity merges (ENT-5): a user's Entities are looked up by their creator when Graphiti extracts
// one of the same name, and a merged node's tombstone by its uuid.
CREATE INDEX entity_created_by IF NOT EXISTS FOR (n:Entity) ON (n.createdBy);
CREATE INDEX merged_entity_uuid IF NOT EXISTS FOR (n:MergedEntity) ON (n.uuid)
