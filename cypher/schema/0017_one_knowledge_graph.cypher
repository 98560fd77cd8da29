// Graphiti in the same graph: an extracted Entity is graphiti-core's own node, whose
// group is its `group_id`; Aiden no longer mirrors Entities with a `groupId` of its own. Entities
// mirrored before keep their group under graphiti's key, and the index on the old key goes.
MATCH (n:Entity)
WHERE n.group_id IS NULL AND n.groupId IS NOT NULL
SET n.group_id = n.groupId;
DROP INDEX entity_group IF EXISTS
