// WM-1: from one Alternative back to the root along RESPONDS_TO (the exact parent each
// Alternative answered), in one traversal.
MATCH (:Alternative {id: $alternativeId})-[:RESPONDS_TO*0..]->(x:Alternative)
RETURN x.id AS alternativeId, x.turnId AS turnId, x.conversationId AS conversationId,
       x.speaker AS speaker, x.content AS content, x.episodeId AS episodeId, x.binding AS binding,
       x.depth AS sequence, x.state AS state, x.turnType AS turnType, x.error AS error
