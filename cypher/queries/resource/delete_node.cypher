MATCH (n:__LABEL__ {id: $id})
DELETE n
