// A settled claim goes (in the transaction that applies its run's result).
MATCH (k:UpkeepClaim {key: $key})
OPTIONAL MATCH (k)-[e:STARTED_RUN]->()
DELETE e
WITH DISTINCT k
DELETE k
RETURN $key AS id
