// AGT-13: the owner confirms a proposed Entity (it becomes theirs like one they created) or
// rejects it (it is removed). Only a proposal changes; the caller's ownership is checked here.
MATCH (n:Entity {uuid: $uuid, createdBy: $caller, status: 'proposed'})
SET n.status = CASE WHEN $confirm THEN 'confirmed' ELSE 'rejected' END, n.decidedAt = $now
FOREACH (_ IN CASE WHEN $confirm THEN [] ELSE [1] END | DETACH DELETE n)
RETURN count(*) AS n
