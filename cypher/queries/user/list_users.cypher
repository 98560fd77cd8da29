// GET /v1/users (admins): every user, by id, with whether a password is set (USR-5; never the
// hash) and what they used: today's spend (their `user:<id>#<day>` SpendWindow, AGT-14; the key
// is `Subject::User(id).spend_key(day)`), how many runs they started and the newest (run ids are
// UUIDv7, so the greatest is the last made). Runs are counted by their STARTED_BY edge, which the
// engine adds in the pass that begins the run; a user's spend window is found by its unique key.
MATCH (u:User)
OPTIONAL MATCH (w:SpendWindow {key: 'user:' + u.id + '#' + $day})
CALL (u) {
  OPTIONAL MATCH (u)<-[:STARTED_BY]-(r:Run)
  RETURN count(r) AS runs, max(r.id) AS lastRunId
}
OPTIONAL MATCH (last:Run {id: lastRunId})
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt,
       coalesce(u.disabled, false) AS disabled, u.quota AS quota,
       u.defaultProcessId AS defaultProcessId, u.passwordHash IS NOT NULL AS hasPassword,
       coalesce(w.spentMicros, 0) AS spentMicros, runs, lastRunId, last.createdAt AS lastRunAt
ORDER BY id
