// Recall (issue #37): the content's embedding, written once it is bound (again for a corrected
// revision); the node becomes `Embedded`, which the recall_embedding vector index covers.
MATCH (x:__LABEL__ {id: $id})
SET x:Embedded, x.embedding = $embedding, x.embeddedWith = $model,
    x.embeddedRevision = coalesce(x.revision, 1)
