MATCH (w:Worker)
// WRK-1: $types are the operation types (aiden_jobs::OPERATION_TYPES).
WHERE NOT w.type IN $types
   OR NOT w.status IN ['idle', 'busy', 'offline']
   OR (w.status = 'idle' AND w.currentJobId IS NOT NULL)
   OR (w.status = 'busy' AND w.currentJobId IS NULL)
RETURN w.id AS id
