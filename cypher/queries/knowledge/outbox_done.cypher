// A binding reached its final state: its outbox item goes.
MATCH (o:IngestItem {id: $id})
DELETE o
