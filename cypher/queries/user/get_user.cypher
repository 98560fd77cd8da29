MATCH (u:User {id: $id})
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt,
       coalesce(u.disabled, false) AS disabled, u.quota AS quota,
       u.defaultProcessId AS defaultProcessId
