// One line of the run list, under the Run's write lock (run/get_run.cypher says why): the
// list reads a line again this way when it showed a commit in part (run/list.cypher).
MATCH (r:Run {id: $id})
SET r.ownerId = r.ownerId
RETURN r.id AS id, r.processId AS processId, r.processVersion AS processVersion,
       r.status AS status, r.depth AS depth, r.parentRunId AS parentRunId, r.ownerId AS ownerId,
       r.createdAt AS createdAt, r.startedAt AS startedAt, r.finishedAt AS finishedAt,
       r.triggerKind AS triggerKind, r.triggerSubjectId AS triggerSubjectId
