// What an event stream needs of its run: who may see it, whether it settled, how far its log is
// (and, for a Summary naming the run that made it, its Process).
MATCH (r:Run {id: $id})
RETURN r.ownerId AS ownerId, r.status AS status, r.eventSeq AS eventSeq, r.processId AS processId
