// Entities MENTIONed by at least $threshold Episodes (of Alternatives or Summaries), not yet
// enriched and not being enriched, with who the enrichment runs for: the Entity's creator,
// else the owner of a conversation that mentions it.
MATCH (ep:Episodic)-[:MENTIONS]->(n:Entity)
WHERE n.enrichedAt IS NULL AND coalesce(n.status, 'confirmed') = 'confirmed'
  AND coalesce(n.enrichmentRetryAt, '') <= $now
WITH n, count(ep) AS edges, collect(ep.group_id) AS groups
WHERE edges >= $threshold
OPTIONAL MATCH (k:UpkeepClaim {key: 'enrichment:' + n.uuid})
WITH n, edges, groups, k WHERE k IS NULL
OPTIONAL MATCH (c:Conversation) WHERE c.id IN groups
WITH n, edges, collect(DISTINCT c.ownerId) AS owners
RETURN n.uuid AS uuid, coalesce(n.createdBy, owners[0]) AS ownerId, edges
LIMIT $limit
