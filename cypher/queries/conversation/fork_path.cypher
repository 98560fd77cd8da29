// CONV-3: the path a fork copies, from the fork point back to the root along RESPONDS_TO: each
// Alternative as `path.cypher` lists it, paired with its lifecycle, Turn type and error.
MATCH (:Alternative {id: $alternativeId})-[:RESPONDS_TO*0..]->(x:Alternative)
RETURN collect([[x.id, x.turnId, x.conversationId, x.speaker, x.content, x.episodeId,
                 x.binding, x.depth], [x.state, x.turnType, x.error]]) AS path
