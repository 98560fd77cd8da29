// Recall over content: Alternatives (kind `episode`), Summaries, Introspections and
// Memories (SRCH-4),
// found by meaning (the vector index, over-fetched; or, when $exact, a scan of the caller's own
// newest embedded content), by words (full-text) and through the Entities found for the query (graph:
// content whose Episode MENTIONS one of $entityUuids). One row per signal; the service fuses them.
// Then only what the caller owns (SRCH-2, OWN-2: never another user's), with its provenance
// and whether it is embedded yet (SRCH-6: until then only words and Entities find it).
CALL {
  WITH $vector AS v
  WHERE v IS NOT NULL AND NOT $exact
  CALL db.index.vector.queryNodes('recall_embedding', $k, v) YIELD node, score
  RETURN node AS x, 'vector' AS signal, score, null AS via
  UNION ALL
  WITH $vector AS v
  WHERE v IS NOT NULL AND $exact
  CALL {
    MATCH (c:Conversation {ownerId: $callerId})
    WHERE $conversationId IS NULL OR c.id = $conversationId
    MATCH (x:Alternative {conversationId: c.id})
    WHERE x:Embedded
    RETURN x
    UNION
    MATCH (c:Conversation {ownerId: $callerId})
    WHERE $conversationId IS NULL OR c.id = $conversationId
    MATCH (x:Summary {conversationId: c.id})
    WHERE x:Embedded
    RETURN x
    UNION
    MATCH (x:Introspection {ownerId: $callerId})
    WHERE x:Embedded AND $conversationId IS NULL
    RETURN x
    UNION
    MATCH (x:Memory {ownerId: $callerId})
    WHERE x:Embedded AND $conversationId IS NULL
    RETURN x
  }
  WITH x, v
  WHERE coalesce(x.status, '') <> 'archived'
    AND ((x:Alternative AND 'episode' IN $kinds) OR (x:Summary AND 'summary' IN $kinds)
         OR (x:Introspection AND 'introspection' IN $kinds) OR (x:Memory AND 'memory' IN $kinds))
  // The scan's cost grows with what the caller owns: only the newest $scanCap are compared
  // (their vectors read), older content is still found by the index, by words and the graph.
  WITH x, v
  ORDER BY coalesce(x.correctedAt, x.createdAt) DESC
  LIMIT $scanCap
  WITH x, v
  WHERE size(x.embedding) = size(v)
  WITH x, vector.similarity.cosine(x.embedding, v) AS score
  ORDER BY score DESC
  LIMIT $k
  RETURN x, 'vector' AS signal, score, null AS via
  UNION ALL
  WITH $text AS t
  WHERE t <> ''
  CALL db.index.fulltext.queryNodes('recall_content', t, {limit: $k}) YIELD node, score
  RETURN node AS x, 'text' AS signal, score, null AS via
  UNION ALL
  WITH $text AS t
  WHERE t <> '' AND 'memory' IN $kinds
  CALL db.index.fulltext.queryNodes('memory_content', t, {limit: $k}) YIELD node, score
  RETURN node AS x, 'text' AS signal, score, null AS via
  UNION ALL
  UNWIND $entityUuids AS u
  CALL {
    WITH u
    MATCH (:Entity {uuid: u})<-[:MENTIONS]-(:Episodic)<-[:HAS_CONTENT]-(x)
    RETURN x
    LIMIT 20
  }
  RETURN x, 'graph' AS signal, null AS score, u AS via
}
WITH x, signal, score, via
WHERE ((x:Alternative AND 'episode' IN $kinds) OR (x:Summary AND 'summary' IN $kinds)
       OR (x:Introspection AND 'introspection' IN $kinds) OR (x:Memory AND 'memory' IN $kinds))
  AND x.content IS NOT NULL
OPTIONAL MATCH (c:Conversation {id: coalesce(x.conversationId, '')})
WITH x, signal, score, via, c
WHERE coalesce(c.ownerId, x.ownerId) = $callerId
  AND ($conversationId IS NULL OR c.id = $conversationId)
  AND coalesce(x.status, '') <> 'archived'
// Of the caller's own found by meaning only the nearest $keepByMeaning go on, and past them
// the messages that supersede another (SRCH-7: a kept message whose newer version were left
// out would be demoted as superseded by one not found): working memory's search ranks by
// meaning alone and keeps a few, so the other rows would be read and sent for nothing (a
// search that fuses signals keeps them all: $keepByMeaning is its $k).
WITH x, signal, score, via, c
ORDER BY signal, score DESC
WITH signal, collect([x, score, via, c]) AS found
UNWIND range(0, size(found) - 1) AS i
WITH signal, i, found[i][0] AS x, found[i][1] AS score, found[i][2] AS via, found[i][3] AS c
WHERE signal <> 'vector' OR i < $keepByMeaning OR EXISTS { (x)-[:SUPERSEDES]->(:Alternative) }
WITH x, signal, score, via, c
OPTIONAL MATCH (:ConversationTurn {id: coalesce(x.turnId, '')})-[h:HAS_ALTERNATIVE]->(x)
// SRCH-7: the newest message that supersedes it, and the one it supersedes (both the same
// user's, by the rule's construction).
CALL {
  WITH x
  OPTIONAL MATCH (x)<-[:SUPERSEDES]-(n:Alternative)
  WHERE coalesce(n.status, '') <> 'archived'
  RETURN n
  ORDER BY n.createdAt DESC
  LIMIT 1
}
CALL {
  WITH x
  OPTIONAL MATCH (x)-[:SUPERSEDES]->(o:Alternative)
  WHERE coalesce(o.status, '') <> 'archived'
  RETURN o
  ORDER BY o.createdAt DESC
  LIMIT 1
}
RETURN x.id AS id,
       CASE WHEN x:Alternative THEN 'episode' WHEN x:Summary THEN 'summary'
            WHEN x:Memory THEN 'memory' ELSE 'introspection' END AS kind,
       signal, score, via, x.content AS content, x.episodeId AS episodeId,
       c.id AS conversationId, c.title AS conversationTitle, x.turnId AS turnId,
       h.isActive AS active, x.speaker AS speaker,
       coalesce(x.correctedAt, x.createdAt) AS createdAt, x:Embedded AS embedded,
       CASE WHEN n IS NULL THEN null
            ELSE {id: n.id, text: coalesce(n.content, ''), conversationId: n.conversationId,
                  turnId: n.turnId, createdAt: n.createdAt} END AS supersededBy,
       CASE WHEN o IS NULL THEN null
            ELSE {id: o.id, text: coalesce(o.content, ''), conversationId: o.conversationId,
                  turnId: o.turnId, createdAt: o.createdAt} END AS supersedes
