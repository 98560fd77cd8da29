// AGT-10: a user's top-level runs not settled yet ($open: every run status but the settled
// ones), for their own maxConcurrent. Found through the status index: unsettled runs are few,
// a user's runs of all time are not.
MATCH (r:Run)
WHERE r.status IN $open AND r.ownerId = $ownerId
  AND r.depth = 1
// DISTINCT: the index is sought once per status, and a run the engine moves on between two
// seeks would be met twice.
RETURN count(DISTINCT r) AS n
