#!/usr/bin/env bash
# The graph server's floor: Neo4j's CPU per row for the cheapest durable writes,
# batched as the engine's passes are, on a warm JVM and an empty graph (the stack's bench
# instance, wiped before and stopped after).
# One JSON line per shape (create, update, create_linked, step); see bench/src/graph_floor.rs.
#   scripts/bench-graph-floor.sh [--batch 32] [--transactions 1500] [--warmup 3000] [--shapes step]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/stack.sh env >/dev/null
# shellcheck disable=SC1091
. .stack/env
echo "bench: building (release)" >&2
cargo build --release -p aiden-bench --bin aiden-bench-graph-floor --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"

scripts/stack.sh wipe-graph bench >/dev/null
scripts/stack.sh graph-up bench >/dev/null
trap 'scripts/stack.sh graph-down bench >/dev/null 2>&1 || true' EXIT
export AIDEN_NEO4J_URI=bolt://127.0.0.1:${AIDEN_STACK_BENCH_BOLT_PORT:-7689}
echo "bench: measuring on the empty Neo4j at $AIDEN_NEO4J_URI" >&2
"$BIN/aiden-bench-graph-floor" "$@"
