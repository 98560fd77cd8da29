// The Process a user's conversations answer with when none is named (null: none).
MATCH (u:User {id: $id})
SET u.defaultProcessId = $processId
RETURN u.id AS id
