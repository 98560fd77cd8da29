// TURN-6: an Alternative is `generating` exactly while its run is unsettled. One still
// generating after its run settled (or without a run) would be shown wrongly forever.
MATCH (a:Alternative {state: $generating})
OPTIONAL MATCH (r:Run {id: coalesce(a.runId, '')})
WITH a, r
WHERE r IS NULL OR r.status IN $settled
RETURN a.id AS id
