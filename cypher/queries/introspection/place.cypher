// INT-1: a new note takes $position; the note there (if any) is archived, never deleted, and
// gives up the position's slotKey (unique), so two current notes can never share a position.
// The note's Episode (group `system_introspection`) is ingested through the outbox (EPI-3).
OPTIONAL MATCH (old:Introspection {slotKey: $ownerId + '#' + toString($position)})
FOREACH (_ IN CASE WHEN old IS NULL THEN [] ELSE [1] END |
  SET old.status = 'archived', old.archivedAt = $now, old.slotKey = 'archived:' + old.id,
      old.replacedBy = $id)
WITH count(old) AS replaced
MATCH (u:User {id: $ownerId})
CREATE (i:Introspection {id: $id, ownerId: $ownerId, carouselPosition: $position,
                         slotKey: $ownerId + '#' + toString($position), status: 'current',
                         content: $content, conversationContext: $conversationContext,
                         runId: $runId, createdAt: $now, revision: 1, binding: $pending})
CREATE (i)-[:OWNED_BY {createdAt: $now}]->(u)
CREATE (:IngestItem {id: 'introspection:' + $id, kind: 'introspection', targetId: $id,
                     conversationId: 'system_introspection', state: $new, createdAt: $now})
WITH i
OPTIONAL MATCH (r:Run {id: coalesce($runId, '')})
FOREACH (_ IN CASE WHEN r IS NULL THEN [] ELSE [1] END | CREATE (i)-[:GENERATED_BY]->(r))
RETURN i.id AS id
