// CONV-3: the copied path's structure (TURN-3) — CHILD_OF and RESPONDS_TO between the copies.
UNWIND $links AS l
MATCH (t:ConversationTurn {id: l.turnId}), (p:ConversationTurn {id: l.parentTurnId}),
      (a:Alternative {id: l.alternativeId}), (pa:Alternative {id: l.parentAlternativeId})
CREATE (t)-[:CHILD_OF {viaAlternative: l.parentAlternativeId}]->(p)
CREATE (a)-[:RESPONDS_TO]->(pa)
RETURN count(*) AS n
