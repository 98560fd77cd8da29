// AGT-10: one node per Process (or user) and clock hour counts the runs started in it. Every
// start under such a quota writes it, so concurrent starts serialize on it (on every API
// instance: Neo4j locks the node until the commit)
// and each sees the runs the others created. A Process's key is `processId#hour`, a user's
// `user:userId#hour`.
MERGE (w:QuotaWindow {key: $key})
ON CREATE SET w.processId = $processId, w.userId = $userId, w.windowStart = $windowStart,
              w.count = 0
SET w.count = w.count + 1, w.touchedAt = $now
RETURN w.count AS n
