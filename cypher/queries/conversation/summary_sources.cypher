// SUM-1 / WM-3: what each named source is (Alternative, Summary or Episode), which
// Conversation it belongs to, that Conversation's owner (OWN-2: another user's source must look
// exactly like an unknown one) and its compression level.
UNWIND $sources AS sid
OPTIONAL MATCH (a:Alternative {id: sid})
OPTIONAL MATCH (s:Summary {id: sid})
OPTIONAL MATCH (e:Episodic {uuid: sid})
WITH sid, a, s, e, coalesce(a.conversationId, s.conversationId, e.group_id) AS conversationId
OPTIONAL MATCH (c:Conversation {id: conversationId})
RETURN sid AS id,
       CASE WHEN a IS NOT NULL THEN 'Alternative' WHEN s IS NOT NULL THEN 'Summary'
            WHEN e IS NOT NULL THEN 'Episode' ELSE null END AS kind,
       conversationId, c.ownerId AS ownerId,
       coalesce(s.compressionLevel, 0) AS level
