// TURN-2: at least one Alternative and exactly one active.
MATCH (t:ConversationTurn)
OPTIONAL MATCH (t)-[h:HAS_ALTERNATIVE]->(:Alternative)
WITH t, count(h) AS alts, sum(CASE WHEN h.isActive = true THEN 1 ELSE 0 END) AS active
WHERE alts = 0 OR active <> 1
RETURN t.id AS id
