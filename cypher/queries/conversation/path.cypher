// WM-1: from one Alternative back to the root along RESPONDS_TO (the exact parent each
// Alternative answered), in one traversal. One record holding one list per Alternative, in the
// order of `PathEntry` in conversations/memory_reads.rs (a thousand-deep path as a thousand
// records cost a fifth more to send and decode; a list keeps its nulls, which `collect` of a
// property would drop). Only what working memory shows: each property read costs about a
// microsecond per Alternative; the three only a fork copies (fork_path.cypher) were about a
// fifth of the cost.
MATCH (:Alternative {id: $alternativeId})-[:RESPONDS_TO*0..]->(x:Alternative)
RETURN collect([x.id, x.turnId, x.conversationId, x.speaker, x.content, x.episodeId,
                x.binding, x.depth]) AS path
