// DELETE /v1/users/{id}/tokens/{tokenId}: revoked for good (kept for the record, USR-3); the
// first revocation's time stays.
MATCH (t:ApiToken {id: $tokenId, userId: $userId})
SET t.revokedAt = coalesce(t.revokedAt, $now), t.revokedBy = coalesce(t.revokedBy, $by)
RETURN t.id AS id, t.name AS name, t.createdAt AS createdAt,
       coalesce(t.bootstrap, false) AS bootstrap,
       t.revokedAt AS revokedAt
