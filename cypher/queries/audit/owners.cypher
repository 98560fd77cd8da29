MATCH (n:__LABEL__)
OPTIONAL MATCH (n)-[:OWNED_BY]->(u:User)
WITH n, count(u) AS owners, collect(u.id) AS ownerIds
WHERE owners <> 1 OR NOT n.ownerId IN ownerIds
RETURN n.id AS id, owners
