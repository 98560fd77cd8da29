// A deleted Service, Tool or Process lets go of its measurements: the MetricValues stay, as
// history, with the entityId they were recorded for (MET-1 checks the entity at write time).
MATCH (:MetricValue)-[r:MEASURES]->(n:__LABEL__ {id: $id})
DELETE r
