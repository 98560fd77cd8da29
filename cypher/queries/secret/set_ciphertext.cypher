MATCH (s:Secret {id: $id})
SET s.encryptedValue = $encryptedValue
RETURN s.id AS id
