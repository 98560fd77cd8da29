#!/usr/bin/env bash
# Overload held (admission): one `aiden serve` with an admission bound
# (AIDEN_ADMIT_QUEUE_BOUND=200 ready messages in the run queues) and one rest_api pool on the
# tests' stack. Measures the rate the stack sustains, starts runs at ten times that rate for
# SECONDS (default 60), then prints the starts accepted and refused (503 with Retry-After),
# requests that got no answer, the slowest answer, the peak memory of serve, the pool, Neo4j
# and RabbitMQ, runs lost or stuck, and how long throughput took to come back. Exits non-zero
# when anything acknowledged is lost or stuck, a request hangs, or recovery takes over 30 s.
#   scripts/overload.sh [SECONDS]
# Uses the tests' Neo4j instance and RabbitMQ virtual host: not while the test suite runs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

# shellcheck source=scripts/lib/on-test-stack.sh
. scripts/lib/on-test-stack.sh overload
cargo run --quiet -p aiden-tests --bin aiden-overload -- "$@"
