// After the broker confirmed them: the items are in RabbitMQ.
UNWIND $ids AS id
MATCH (o:IngestItem {id: id})
SET o.state = $published, o.publishedAt = $now
RETURN count(o) AS n
