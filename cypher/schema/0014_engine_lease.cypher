// The engine lease: one node that names the `aiden serve` whose engine is active.
// Unique, so two instances starting at once cannot each create their own.
CREATE CONSTRAINT engine_lease_id IF NOT EXISTS FOR (n:EngineLease) REQUIRE n.id IS UNIQUE
