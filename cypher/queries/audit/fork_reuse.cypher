// FORK-1: a StepRun that reused a recorded output (`reusedFrom` set, or a REUSED_FROM edge)
// has exactly one REUSED_FROM, to the StepRun `reusedFrom` names, of the same step and with
// the same input hash; and its Run is a fork (FORKED_FROM) of that StepRun's run.
MATCH (sr:StepRun)
WHERE sr.reusedFrom IS NOT NULL OR EXISTS { (sr)-[:REUSED_FROM]->() }
OPTIONAL MATCH (sr)-[:REUSED_FROM]->(src:StepRun)
WITH sr, collect(src) AS sources
WHERE size(sources) <> 1
   OR sources[0].id <> coalesce(sr.reusedFrom, '')
   OR sources[0].stepId <> sr.stepId
   OR coalesce(sources[0].inputHash, '') <> coalesce(sr.inputHash, '-')
   OR NOT EXISTS { (:Run {id: sr.runId})-[:FORKED_FROM]->(:Run {id: sources[0].runId}) }
RETURN sr.id AS id
