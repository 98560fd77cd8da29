// What an admin repair needs of a Summary: its revision, content and whether another Summary
// summarizes it.
MATCH (s:Summary {id: $id})
RETURN s.id AS id, s.conversationId AS conversationId, s.content AS content,
       coalesce(s.revision, 1) AS revision,
       EXISTS { MATCH (:Summary)-[:SUMMARIZES]->(s) } AS summarized
