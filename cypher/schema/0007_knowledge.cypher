// The knowledge layer. IngestItem is the outbox: content to ingest, created in the
// transaction that makes the content and deleted once its binding is final. Episodic and
// Entity are graphiti-core's own labels and keys: the Graphiti service writes those nodes into
// this same database, and creates the two uuid constraints below itself (same names) when it
// reaches a fresh database first (docs/knowledge.md, "One graph"). `entity_group` (groupId) is
// no longer read: an extracted Entity's group is graphiti's `group_id`, indexed by graphiti.
CREATE CONSTRAINT ingest_item_id IF NOT EXISTS FOR (n:IngestItem) REQUIRE n.id IS UNIQUE;
CREATE INDEX ingest_item_state IF NOT EXISTS FOR (n:IngestItem) ON (n.state);
CREATE CONSTRAINT episodic_uuid IF NOT EXISTS FOR (n:Episodic) REQUIRE n.uuid IS UNIQUE;
CREATE CONSTRAINT entity_uuid IF NOT EXISTS FOR (n:Entity) REQUIRE n.uuid IS UNIQUE;
CREATE INDEX entity_group IF NOT EXISTS FOR (n:Entity) ON (n.groupId);
CREATE INDEX entity_created_by IF NOT EXISTS FOR (n:Entity) ON (n.createdBy)
