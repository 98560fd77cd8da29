#!/usr/bin/env bash
# The conversation benchmark: one conversation 1,000 turns deep with 3 alternatives
# per turn, built through the public API of a release `aiden serve` on the local stack; prints
# p50/p99 per operation (append, add alternative, switch, working memory at depth 10/100/1000,
# tree). No workers are needed: every turn is a user turn. It measures on an empty graph, the
# stack's bench instance wiped first: no episode pool runs here, so the conversation's messages
# are never embedded, and in the main graph they would wait in its outbox for the next pool
# (scripts/bench-recall.sh's, which would embed them while it times its searches).
# AIDEN_BENCH_GRAPH=main measures on the main graph instead (one whose messages are embedded,
# so that working memory's search finds something; the Graphiti service up for its embedder).
#   scripts/bench-conversations.sh [--depth 1000] [--alternatives 3] [--switches 300] …
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/stack.sh up >/dev/null
# shellcheck disable=SC1091
. .stack/env
PORT=${AIDEN_BENCH_PORT:-18384}
GRAPH=${AIDEN_BENCH_GRAPH:-bench}
case "$GRAPH" in
  bench)
    scripts/stack.sh wipe-graph bench >/dev/null
    scripts/stack.sh graph-up bench >/dev/null
    export AIDEN_NEO4J_URI=bolt://127.0.0.1:${AIDEN_STACK_BENCH_BOLT_PORT:-7689}
    echo "bench: on the empty Neo4j at $AIDEN_NEO4J_URI (AIDEN_BENCH_GRAPH=main for the main one)" >&2
    ;;
  main) ;;
  *) echo "bench: AIDEN_BENCH_GRAPH is bench or main, not '$GRAPH'" >&2; exit 2 ;;
esac
export AIDEN_HTTP_ADDR=127.0.0.1:$PORT RUST_LOG=${RUST_LOG:-warn}

echo "bench: building (release)" >&2
cargo build --release -p aiden -p aiden-bench --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
"$BIN/aiden" migrate >/dev/null

pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  [ "$GRAPH" = main ] || scripts/stack.sh graph-down bench >/dev/null 2>&1 || true
}
trap cleanup EXIT
# A server already on the port would be measured instead of this build: refuse.
if curl -s -o /dev/null "http://$AIDEN_HTTP_ADDR/healthz"; then
  echo "bench: something already listens on $AIDEN_HTTP_ADDR (set AIDEN_BENCH_PORT)" >&2
  exit 1
fi
"$BIN/aiden" serve >.stack/bench-conversations-serve.log 2>&1 &
pid=$!
for _ in $(seq 1 240); do
  curl -fsS "http://$AIDEN_HTTP_ADDR/readyz" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS "http://$AIDEN_HTTP_ADDR/readyz" >/dev/null 2>&1 || {
  echo "bench: aiden serve did not become ready (see .stack/*serve.log)" >&2
  exit 1
}

"$BIN/aiden-bench-conversations" --server "http://$AIDEN_HTTP_ADDR" --token "$AIDEN_ADMIN_TOKEN" "$@"
