#!/usr/bin/env bash
# The graph server's floor (issue #10): ArcadeDB's CPU per row for the cheapest durable writes,
# batched as the engine's passes are, on a warm JVM and a new, empty database (dropped after).
# One JSON line per shape (create, update, create_linked, step); see bench/src/graph_floor.rs.
#   scripts/bench-graph-floor.sh [--batch 32] [--transactions 1500] [--warmup 3000] [--shapes step]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/stack.sh up >/dev/null
# shellcheck disable=SC1091
. .stack/env
# shellcheck source=scripts/lib/arcadedb-database.sh
. scripts/lib/arcadedb-database.sh
echo "bench: building (release)" >&2
cargo build --release -p aiden-bench --bin aiden-bench-graph-floor --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"

export AIDEN_NEO4J_DATABASE="bench_floor_$(date +%s)"
arcadedb_database create "$AIDEN_NEO4J_DATABASE"
trap 'arcadedb_database drop "$AIDEN_NEO4J_DATABASE" || true' EXIT
echo "bench: measuring on the new database $AIDEN_NEO4J_DATABASE" >&2
"$BIN/aiden-bench-graph-floor" "$@"
