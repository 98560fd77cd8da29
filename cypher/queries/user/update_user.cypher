// PATCH /v1/users/{id} (USR-1 decided before this runs). `quota` (JSON text, AGT-10/AGT-14)
// changes only when $setQuota (null clears it).
MATCH (u:User {id: $id})
SET u.role = coalesce($role, u.role), u.disabled = coalesce($disabled, u.disabled, false),
    u.quota = CASE WHEN $setQuota THEN $quota ELSE u.quota END,
    u.updatedAt = $now, u.updatedBy = $by
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt,
       coalesce(u.disabled, false) AS disabled, u.quota AS quota
