#!/usr/bin/env bash
# The knowledge-layer benchmark. Each phase runs on its own RabbitMQ virtual host and
# its own release `aiden serve` (API + outbox relay), on the stack's main Neo4j:
#   with      `aiden worker --type episode`, the Graphiti service (graphiti-core on the same
#             Neo4j database, AIDEN_NEO4J_* of .stack/env) and the scripted OpenAI-compatible LLM (workers/graphiti/fake_llm.py) run
#             beside the appends; prints the append latency and the lag commit → bound and
#             commit → extracted (server timestamps).
#   without   the same appends with no ingestion pool and no Graphiti (append latency only).
# Phases run in the order of AIDEN_BENCH_PHASES (default "without with").
#   scripts/bench-ingestion.sh [--turns 1000] [--conversations 50] [--rate 4]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/stack.sh up >/dev/null
scripts/graphiti.sh up >/dev/null
# shellcheck disable=SC1091
. .stack/env
SERVE_PORT=${AIDEN_BENCH_PORT:-18392}
GRAPHITI_PORT=${AIDEN_BENCH_GRAPHITI_PORT:-18393}
LLM_PORT=${AIDEN_BENCH_LLM_PORT:-18394}
for p in "$SERVE_PORT" "$GRAPHITI_PORT" "$LLM_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "bench: port $p is busy (AIDEN_BENCH_PORT, AIDEN_BENCH_GRAPHITI_PORT, AIDEN_BENCH_LLM_PORT)" >&2
    exit 1
  fi
done

echo "bench: building (release)" >&2
cargo build --release -p aiden -p aiden-bench --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
# Ingestion is background work: it and the (here local) LLM run at a lower CPU priority, so that
# on two cores the API and the graph come first.
NICE="nice -n ${AIDEN_INGEST_NICE:-10}"
export AIDEN_HTTP_ADDR=127.0.0.1:$SERVE_PORT AIDEN_GRAPHITI_URL=http://127.0.0.1:$GRAPHITI_PORT
export RUST_LOG=${RUST_LOG:-warn}

pids=()
vhosts=()
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pids=()
  sleep 0.5
}
cleanup() {
  stop_all
  for v in "${vhosts[@]}"; do rabbitmqctl -q delete_vhost "$v" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
wait_for() { # url
  for _ in $(seq 1 120); do curl -fsS "$1" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "bench: $1 did not answer" >&2; exit 1
}

# Ingestion is measured, not runs: no engine warm-up passes (40 s per phase).
export AIDEN_ENGINE_WARM_UP_MS=0
phase() { # with|without, then the benchmark's arguments
  local name=$1; shift
  local vhost="aiden-bench-ingestion-$name"
  vhosts+=("$vhost")
  rabbitmqctl -q add_vhost "$vhost" >/dev/null 2>&1 || true
  rabbitmqctl -q set_permissions -p "$vhost" guest '.*' '.*' '.*' >/dev/null
  export AIDEN_AMQP_URI="amqp://guest:guest@127.0.0.1:5672/$vhost"
  "$BIN/aiden" serve >".stack/bench-ingestion-serve-$name.log" 2>&1 &
  pids+=($!)
  if [ "$name" = with ]; then
    $NICE python3 workers/graphiti/fake_llm.py --port "$LLM_PORT" --dim 384 >.stack/bench-ingestion-llm.log 2>&1 &
    pids+=($!)
    AIDEN_GRAPHITI_ADDR=127.0.0.1:$GRAPHITI_PORT \
      AIDEN_GRAPHITI_LLM_BASE_URL=http://127.0.0.1:$LLM_PORT/v1 AIDEN_GRAPHITI_LLM_MODEL=fake \
      AIDEN_GRAPHITI_EMBEDDER=openai AIDEN_GRAPHITI_EMBEDDER_MODEL=fake-embedding AIDEN_GRAPHITI_EMBEDDING_DIM=384 \
      $NICE .stack/graphiti-venv/bin/python workers/graphiti/aiden_graphiti_service.py >.stack/bench-ingestion-graphiti.log 2>&1 &
    pids+=($!)
    $NICE "$BIN/aiden" worker --type episode >.stack/bench-ingestion-worker.log 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$LLM_PORT/healthz"
    wait_for "http://127.0.0.1:$GRAPHITI_PORT/healthz"
  fi
  wait_for "http://$AIDEN_HTTP_ADDR/readyz"
  "$BIN/aiden-bench-ingestion" --server "http://$AIDEN_HTTP_ADDR" --token "$AIDEN_ADMIN_TOKEN" --phase "$name" "$@"
  stop_all
}

for name in ${AIDEN_BENCH_PHASES:-without with}; do
  phase "$name" "$@"
done
