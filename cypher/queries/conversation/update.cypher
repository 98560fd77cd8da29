// PATCH: title and status, guarded by the revision the decision was made on.
MATCH (c:Conversation {id: $id})
WHERE c.revision = $expectedRevision
SET c.title = $title, c.status = $status, c.updatedAt = $now, c.revision = c.revision + 1
RETURN c.id AS id
