// GET /v1/users (admins): every user, by id, with whether a password is set (USR-5; never the
// hash).
MATCH (u:User)
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt,
       coalesce(u.disabled, false) AS disabled, u.quota AS quota,
       u.defaultProcessId AS defaultProcessId, u.passwordHash IS NOT NULL AS hasPassword
ORDER BY id
