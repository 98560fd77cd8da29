// An enrichment that failed every attempt: the Entity is a candidate again after $retryAt.
MATCH (n:Entity {uuid: $uuid})
SET n.enrichmentRetryAt = $retryAt, n.enrichmentError = $error
RETURN n.uuid AS id
