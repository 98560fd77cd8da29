// Recall: the content's embedding, written once it is bound (again for a corrected
// revision); the node becomes `Embedded`, which the recall_embedding vector index covers.
// Only for the revision that was embedded: a correction meanwhile is embedded on its own pass.
MATCH (x:__LABEL__ {id: $id})
WHERE coalesce(x.revision, 1) = $revision
SET x:Embedded, x.embedding = $embedding, x.embeddedWith = $model, x.embeddedRevision = $revision
