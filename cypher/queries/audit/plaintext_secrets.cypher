MATCH (s:Secret)
WHERE s.encryptedValue IS NULL OR NOT s.encryptedValue STARTS WITH 'v1:'
RETURN s.id AS id
