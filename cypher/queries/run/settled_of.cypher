// The newest settled top-level runs of a Process at versions below $below (a dry replay's
// `last: N`), the caller's own unless $ownerId is null (an admin). Run ids are UUIDv7: id order
// is creation order.
MATCH (r:Run {processId: $processId})
WHERE r.processVersion < $below AND r.depth = 1 AND r.status IN $settled
  AND ($ownerId IS NULL OR r.ownerId = $ownerId)
RETURN r.id AS id
ORDER BY r.id DESC
LIMIT $limit
