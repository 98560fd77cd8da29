// CONV-3: the path a fork copies, from the fork point back to the root along RESPONDS_TO: what
// `path.cypher` reads and, in a second list in the same order (one aggregation over the same
// rows), each Alternative's lifecycle, Turn type and error.
MATCH (:Alternative {id: $alternativeId})-[:RESPONDS_TO*0..]->(x:Alternative)
RETURN collect([x.id, x.turnId, x.conversationId, x.speaker, x.content, x.episodeId,
                x.binding, x.depth]) AS path,
       collect([x.state, x.turnType, x.error]) AS lifecycle
