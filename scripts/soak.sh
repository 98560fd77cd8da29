#!/usr/bin/env bash
# The soak (issue #12): 2 minutes of mixed load (Process runs, agent runs calling a Tool,
# conversations answered by agent turns, on the scripted model) against two `aiden serve`
# instances and the worker pools, while 20 SIGKILLs hit random ones and RabbitMQ and Neo4j
# are each restarted once. Prints runs lost or stuck, step results recorded twice,
# Alternatives left generating and `aiden check`'s verdict; exits non-zero unless all are 0.
#   scripts/soak.sh [SECONDS] [KILLS]      (SOAK_SEED=N repeats a run's random choices)
# Uses the tests' Neo4j instance and RabbitMQ virtual host: not while the test suite runs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/stack.sh test-up
# shellcheck disable=SC1091
. .stack/env
# shellcheck disable=SC1091
. .stack/test-env
cargo build --quiet --bin aiden
# Each spawned process logs to a file of its own here (kept for a look after a failure).
export AIDEN_CHILD_LOG_DIR="$ROOT/.stack/soak-logs"
rm -rf "$AIDEN_CHILD_LOG_DIR" && mkdir -p "$AIDEN_CHILD_LOG_DIR"
echo "soak: process logs in $AIDEN_CHILD_LOG_DIR"
cargo run --quiet -p aiden-tests --bin aiden-soak -- "$@"
