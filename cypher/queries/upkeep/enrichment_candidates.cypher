// Entities MENTIONed by at least $threshold Episodes (of Alternatives or Summaries), not yet
// enriched and not being enriched, latest mention first (those that just crossed the
// threshold), with who the enrichment runs for: the Entity's creator, else the owner of a
// conversation that mentions it.
MATCH (ep:Episodic)-[m:MENTIONS]->(n:Entity)
WHERE n.enrichedAt IS NULL AND coalesce(n.status, 'confirmed') = 'confirmed'
  AND coalesce(n.enrichmentRetryAt, '') <= $now
WITH n, count(ep) AS edges, collect(ep.group_id) AS groups,
     max(coalesce(m.createdAt, toString(m.created_at))) AS latest
WHERE edges >= $threshold
OPTIONAL MATCH (k:UpkeepClaim {key: 'enrichment:' + n.uuid})
WITH n, edges, groups, latest, k WHERE k IS NULL
OPTIONAL MATCH (c:Conversation) WHERE c.id IN groups
WITH n, edges, latest, collect(DISTINCT c.ownerId) AS owners
RETURN n.uuid AS uuid, coalesce(n.createdBy, owners[0]) AS ownerId, edges
ORDER BY latest DESC
LIMIT $limit
