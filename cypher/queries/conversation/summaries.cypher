// A Conversation's Summaries, by creation. Working memory reads the same columns in
// conversation/memory_notes.cypher: change both.
MATCH (s:Summary {conversationId: $id})
RETURN s.id AS id, s.conversationId AS conversationId, s.content AS content,
       s.coversUpToTurnId AS coversUpToTurnId, s.compressionLevel AS compressionLevel,
       s.tokenCount AS tokenCount, s.sources AS sources,
       s.alternativeSources AS alternativeSources, s.summarySources AS summarySources,
       s.createdByProcessId AS createdByProcessId, s.runId AS runId, s.createdAt AS createdAt,
       s.episodeId AS episodeId, s.binding AS binding, coalesce(s.revision, 1) AS revision
ORDER BY s.createdAt, s.id
