// Uniqueness of ids per label, created before any data.
CREATE CONSTRAINT user_id IF NOT EXISTS FOR (n:User) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT service_template_id IF NOT EXISTS FOR (n:ServiceTemplate) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT tool_template_id IF NOT EXISTS FOR (n:ToolTemplate) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT service_id IF NOT EXISTS FOR (n:Service) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT secret_id IF NOT EXISTS FOR (n:Secret) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT tool_id IF NOT EXISTS FOR (n:Tool) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT process_id IF NOT EXISTS FOR (n:Process) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT process_version_id IF NOT EXISTS FOR (n:ProcessVersion) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT process_step_id IF NOT EXISTS FOR (n:ProcessStep) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT schema_migration_id IF NOT EXISTS FOR (n:SchemaMigration) REQUIRE n.id IS UNIQUE
