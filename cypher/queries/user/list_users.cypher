// GET /v1/users (admins): every user, by id, with whether a password is set (USR-5; never the
// hash) and what they used: today's spend (their `user:<id>#<day>` SpendWindow, AGT-14; the key
// is `Subject::User(id).spend_key(day)`), how many runs they started: the degree of their STARTED_BY edges, which the engine adds in
// the pass that begins a run, read from the User's record without touching a Run (the newest
// run is not listed: finding it reads every run of the user, 0.1 s for one with 57,000). A
// user's spend window is found by its unique key.
MATCH (u:User)
OPTIONAL MATCH (w:SpendWindow {key: 'user:' + u.id + '#' + $day})
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt,
       coalesce(u.disabled, false) AS disabled, u.quota AS quota,
       u.defaultProcessId AS defaultProcessId, u.passwordHash IS NOT NULL AS hasPassword,
       coalesce(w.spentMicros, 0) AS spentMicros, COUNT { (u)<-[:STARTED_BY]-() } AS runs
ORDER BY id
