MATCH (n:__LABEL__)
WHERE n.id > $after
  AND (n.ownerId = $callerId OR ($othersVisible AND (n.shared = true OR $admin)))
  AND ($includeArchived OR n.archived IS NULL OR n.archived = false)
RETURN n.doc AS doc
ORDER BY n.id
LIMIT $limit
