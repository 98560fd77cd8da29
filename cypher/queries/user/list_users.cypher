// GET /v1/users (admins): a page of users by name (case-insensitive, then id), after the user
// `$cursor` (the last one of the previous page), only those whose name contains `$q` (lower
// case) or whose id starts with it when it is given. Each with whether a password is set
// (USR-5; never the hash) and what they used, read only for the page's users: today's spend
// (their `user:<id>#<day>` SpendWindow, AGT-14, found by its unique key; the key is
// `Subject::User(id).spend_key(day)`) and how many runs they started, the degree of their
// STARTED_BY edges (the engine adds one in the pass that begins a run), read from the User's
// record without touching a Run.
OPTIONAL MATCH (after:User {id: $cursor})
WITH toLower(after.name) AS afterName, after.id AS afterId
MATCH (u:User)
WHERE ($q IS NULL OR toLower(u.name) CONTAINS $q OR u.id STARTS WITH $q)
  AND (afterId IS NULL OR toLower(u.name) > afterName
       OR (toLower(u.name) = afterName AND u.id > afterId))
WITH u
ORDER BY toLower(u.name), u.id
LIMIT $limit
OPTIONAL MATCH (w:SpendWindow {key: 'user:' + u.id + '#' + $day})
RETURN u.id AS id, u.name AS name, u.role AS role, u.createdAt AS createdAt,
       coalesce(u.disabled, false) AS disabled, u.quota AS quota,
       u.defaultProcessId AS defaultProcessId, u.passwordHash IS NOT NULL AS hasPassword,
       coalesce(w.spentMicros, 0) AS spentMicros, COUNT { (u)<-[:STARTED_BY]-() } AS runs
ORDER BY toLower(name), id
