// SRCH-4: memories users asked to keep (an agent step routed to a `memory: write` intent, in the
// engine's pass; or POST /v1/memories), each owned by its user and recorded for ingestion (the
// outbox, EPI-3) in the same transaction. Its Episode's group is the owner's `memory_<ownerId>`.
// The Conversation is the one of the Alternative the keeping run answered with, if any.
UNWIND $items AS m
MATCH (u:User {id: m.ownerId})
OPTIONAL MATCH (a:Alternative {id: coalesce(m.alternativeId, '')})
CREATE (x:Memory {id: m.id, ownerId: m.ownerId, content: m.content, status: 'current',
                  createdAt: m.at, runId: m.runId, alternativeId: m.alternativeId,
                  conversationId: a.conversationId, binding: $pending})
CREATE (x)-[:OWNED_BY {createdAt: m.at}]->(u)
CREATE (:IngestItem {id: 'memory:' + m.id, kind: 'memory', targetId: m.id,
                     conversationId: 'memory_' + m.ownerId, state: $new, createdAt: m.at})
WITH x, m
OPTIONAL MATCH (r:Run {id: coalesce(m.runId, '')})
FOREACH (_ IN CASE WHEN r IS NULL THEN [] ELSE [1] END | CREATE (x)-[:REMEMBERED_BY]->(r))
RETURN x.id AS id
