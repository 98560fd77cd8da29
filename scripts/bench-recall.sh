#!/usr/bin/env bash
# The recall benchmark: search latency at 10,000 Episodes and the embedder's
# throughput, on the stack's main Neo4j. A release `aiden serve` (own RabbitMQ virtual host),
# the episode pool and the Graphiti service with its default embedder (all-MiniLM-L6-v2 on this
# machine; no LLM, so extraction is off and the Episodes carry content only) ingest N messages
# of one new user written through the API; then scripts/bench_recall.py times GET /v1/search
# (p50/p99, Episodes only and all kinds, with the episode pool stopped) and POST /embed; then
# restarts Neo4j and `aiden serve` twice, without any warm-up and as it starts by default (the
# engine's warm-up passes, then the search's), and times the first searches after each start.
# Prints one JSON line last.
#   scripts/bench-recall.sh [--episodes 10000] [--conversations 200] [--queries 300]
# AIDEN_BENCH_RECALL_KEEP=FILE keeps the corpus's user (and token) in FILE, and a later run with
# the same FILE searches as that user instead of writing a new corpus (the main graph keeps it).
# AIDEN_BENCH_RECALL_RESTARTS=0 skips the timed starts (Neo4j restarted twice).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/stack.sh up >/dev/null
scripts/graphiti.sh install >/dev/null
# shellcheck disable=SC1091
. .stack/env
SERVE_PORT=${AIDEN_BENCH_PORT:-18395}
GRAPHITI_PORT=${AIDEN_BENCH_GRAPHITI_PORT:-18396}
for p in "$SERVE_PORT" "$GRAPHITI_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "bench: port $p is busy (AIDEN_BENCH_PORT, AIDEN_BENCH_GRAPHITI_PORT)" >&2
    exit 1
  fi
done
echo "bench: building (release)" >&2
cargo build --release -p aiden --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
VHOST=aiden-bench-recall
rabbitmqctl -q add_vhost "$VHOST" >/dev/null 2>&1 || true
rabbitmqctl -q set_permissions -p "$VHOST" guest '.*' '.*' '.*' >/dev/null
export AIDEN_AMQP_URI="amqp://guest:guest@127.0.0.1:5672/$VHOST"
export AIDEN_HTTP_ADDR=127.0.0.1:$SERVE_PORT AIDEN_GRAPHITI_URL=http://127.0.0.1:$GRAPHITI_PORT
export RUST_LOG=${RUST_LOG:-warn} AIDEN_UPKEEP_INTERVAL_MS=0

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.5
  rabbitmqctl -q delete_vhost "$VHOST" >/dev/null 2>&1 || true
}
trap cleanup EXIT
# Search is measured, not runs: no engine warm-up passes, but for the start timed as `aiden
# serve` starts by default (below).
export AIDEN_ENGINE_WARM_UP_MS=0
wait_for() { # url
  for _ in $(seq 1 120); do curl -fsS "$1" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "bench: $1 did not answer" >&2; exit 1
}

AIDEN_GRAPHITI_ADDR=127.0.0.1:$GRAPHITI_PORT AIDEN_GRAPHITI_LLM_BASE_URL= \
  .stack/graphiti-venv/bin/python workers/graphiti/aiden_graphiti_service.py >.stack/bench-recall-graphiti.log 2>&1 &
pids+=($!)
"$BIN/aiden" serve >.stack/bench-recall-serve.log 2>&1 &
SERVE_PID=$!
pids+=($SERVE_PID)
KEEP=${AIDEN_BENCH_RECALL_KEEP:-}
POOL_PID=
if [[ -z "$KEEP" || ! -s "$KEEP" ]]; then
  "$BIN/aiden" worker --type episode --concurrency 4 >.stack/bench-recall-worker.log 2>&1 &
  POOL_PID=$!
  pids+=($POOL_PID)
fi
wait_for "http://127.0.0.1:$GRAPHITI_PORT/healthz"
wait_for "http://$AIDEN_HTTP_ADDR/readyz"
STATE=$(mktemp)
driver() {
  python3 scripts/bench_recall.py --server "http://$AIDEN_HTTP_ADDR" --token "$AIDEN_ADMIN_TOKEN" \
    --graphiti "http://127.0.0.1:$GRAPHITI_PORT" --neo4j-http "http://127.0.0.1:${AIDEN_STACK_NEO4J_HTTP_PORT:-7474}" \
    --neo4j-password "$AIDEN_NEO4J_PASSWORD" --state "$STATE" "$@"
}
# The searches are timed on an otherwise idle main job: once the corpus is embedded the episode
# pool is stopped (in a graph other runs share it would go on with their backlog, on the same
# two cores), and a kept corpus needs no pool at all.
if [[ -n "$POOL_PID" ]]; then
  ingested=$(driver --ingest-only "$@" | tail -n 1)
  kill "$POOL_PID" 2>/dev/null || true
  wait "$POOL_PID" 2>/dev/null || true
  [[ -z "$KEEP" ]] || cp "$STATE" "$KEEP"
  KEEP=${KEEP:-$STATE.corpus}
  [[ -s "$KEEP" ]] || cp "$STATE" "$KEEP"
fi
searched=$(driver --reuse "$KEEP" "$@" | tail -n 1)

# The first searches after a start: Neo4j restarted (a cold JVM and no cached plan) and
# `aiden serve` started on it, once without the search's warm-up or the engine's passes and once
# as it starts by default. The Graphiti service (its embedder) stays up; the pool is stopped. The serve's start, from its launch to
# /readyz, is printed beside them: the warm-up is part of it.
after_start() { # label warm-ups(none|default)
  kill "$SERVE_PID" 2>/dev/null || true
  wait "$SERVE_PID" 2>/dev/null || true
  scripts/stack.sh graph-down main >/dev/null
  scripts/stack.sh graph-up main >/dev/null
  local t0 t1
  t0=$(date +%s%N)
  if [[ $2 == none ]]; then
    AIDEN_RECALL_WARM_UP=false "$BIN/aiden" serve >>.stack/bench-recall-serve.log 2>&1 &
  else
    # As `aiden serve` starts by default: the engine's warm-up passes, then the search's.
    (unset AIDEN_ENGINE_WARM_UP_MS; exec "$BIN/aiden" serve >>.stack/bench-recall-serve.log 2>&1) &
  fi
  SERVE_PID=$!
  pids+=($SERVE_PID)
  wait_for "http://$AIDEN_HTTP_ADDR/readyz"
  t1=$(date +%s%N)
  echo "bench: $1: aiden serve answered /readyz $(((t1 - t0) / 1000000)) ms after its launch" >&2
  driver --after-start "$1" | tail -n 1 >"$STATE.$1"
  echo "{\"$1_serve_start_ms\": $(((t1 - t0) / 1000000))}" >>"$STATE.$1"
}
# Not in $(…): the function keeps SERVE_PID (the serve to stop next) in this shell.
if [[ "${AIDEN_BENCH_RECALL_RESTARTS:-1}" != 0 ]]; then
  after_start start_without_warm_up none
  after_start start_with_warm_up default
fi
python3 -c "import json,sys; r={}; [r.update(json.loads(x)) for x in sys.argv[1:] if x.strip()]; print(json.dumps(r))" \
  "${ingested:-}" "$searched" $(cat "$STATE.start_without_warm_up" "$STATE.start_with_warm_up" 2>/dev/null | tr -d ' ' )
rm -f "$STATE" "$STATE".*
