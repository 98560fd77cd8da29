// PATCH /v1/users/{id} (USR-1 decided before this runs).
MATCH (u:User {id: $id})
SET u.role = coalesce($role, u.role), u.disabled = coalesce($disabled, u.disabled, false),
    u.updatedAt = $now, u.updatedBy = $by
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt,
       coalesce(u.disabled, false) AS disabled
