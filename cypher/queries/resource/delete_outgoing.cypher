MATCH (n:__LABEL__ {id: $id})-[r]->()
DELETE r
