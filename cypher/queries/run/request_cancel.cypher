// Durable cancel request: the engine's sweep honours it even if the cancel message is lost.
// Under the Run's lock (run/get_run.cypher), so the answer is the status the request met:
// a run not settled ($settled: the settled run statuses) gets `cancelRequested`, whatever it
// waits for; a settled one is left as it is.
MATCH (r:Run {id: $id})
SET r.ownerId = r.ownerId
WITH r, NOT r.status IN $settled AS open
FOREACH (_ IN CASE WHEN open THEN [1] ELSE [] END | SET r.cancelRequested = true)
RETURN r.status AS status, open AS requested
