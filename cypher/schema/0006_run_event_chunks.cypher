// Run events in chunks: one RunEventChunk per run per engine pass holds that pass's
// events (a JSON array, in sequence order), instead of one node per event. The log stays
// append-only and ordered; `key` = `runId#firstSeq` makes an overlapping chunk impossible to
// commit. RunEvent nodes written before this migration are still read.
CREATE CONSTRAINT run_event_chunk_key IF NOT EXISTS FOR (n:RunEventChunk) REQUIRE n.key IS UNIQUE;
CREATE INDEX run_event_chunk_run IF NOT EXISTS FOR (n:RunEventChunk) ON (n.runId)
