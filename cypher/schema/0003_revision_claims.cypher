// One claim per aggregate revision: a write claims `Label:id#revision` and releases the previous
// claim. Two transactions writing the same revision cannot both commit (the unique constraint is
// checked at commit), so optimistic concurrency does not depend on the engine's MVCC alone.
CREATE CONSTRAINT revision_claim_key IF NOT EXISTS FOR (n:RevisionClaim) REQUIRE n.key IS UNIQUE;
CREATE INDEX revision_claim_aggregate IF NOT EXISTS FOR (n:RevisionClaim) ON (n.aggregate)
