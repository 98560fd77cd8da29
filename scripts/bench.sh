#!/usr/bin/env bash
# The execution benchmark: everything local — graph, broker, API + engine, one
# rest_api worker pool, nginx echo on 127.0.0.1:18080 — every step durable in the graph.
# Prints one JSON line per scenario (chain3, chain3_seq, fanout4, the peers' order), after 1,000
# unmeasured runs of each workload used (--warmup N), on a graph server and broker it has just
# (re)started, as the peers harness measures its own (Restate, Celery); AIDEN_BENCH_REUSE_STACK=1
# measures the running ones instead (a warm JVM: not a figure to set beside the peers').
#   scripts/bench.sh [--scale 0.1] [--scenarios chain3_seq,chain3] [--warmup N]
#   scripts/bench.sh --scenarios agent_loop
#       an agent step (model turn, echo tool call, model turn) against a scripted model, one
#       run at a time: the loop's overhead per tool call
#   scripts/bench.sh --scenarios chain3_history [--history-runs 50000]
#       chain3 on a new, empty database, then again once it holds 50,000 completed runs
#       (about 3-4 minutes here), on the stack's third Neo4j instance, wiped first.
#   scripts/bench.sh --scenarios warm_curve,chain3,chain3_seq,fanout4 --warmup 0 [--curve-seconds 240]
#       cold and warm: chain3 without pause from the graph server's start, throughput per 5 s,
#       the steady state and when it reached 90 % of it; then the three scenarios, warm
#   scripts/bench.sh --scenarios isolation
#       chain3 one run at a time, idle and then beside a burst of 1,000 llm_call runs that wait
#       for a pool of 8 behind a slow scripted model: the p99s and their ratio (goal ≤ 1.2), and
#       apart, the runs started while the burst was created and those once all were queued;
#       then idle again once it drained (idle_p99_spread: how far the machine's idle moved)
#   scripts/bench.sh --scenarios fork20,replay100 --warmup 0
#       a finished 20-step chain forked from its last step, one fork at a time (p50 against a
#       one-step run's + 20 ms, and the Tools one fork called); 100 recorded 10-step runs
#       replayed against a changed version (goal: under 1 s)
#   AIDEN_BENCH_QUEUE_TYPE=quorum scripts/bench.sh ...
#       the same on quorum queues, in a fresh vhost of their own
set -euo pipefail
# The scenarios asked for, also where `$*` is a function's own (the EXIT trap's cleanup).
BENCH_ARGS="$*"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

if [ "${AIDEN_BENCH_REUSE_STACK:-0}" = 1 ]; then
  scripts/stack.sh up >/dev/null
else
  scripts/stack.sh restart >/dev/null
  # warm_curve measures from here: the graph server is up (and cold).
  AIDEN_BENCH_GRAPH_STARTED_MS=$(date +%s%3N)
  export AIDEN_BENCH_GRAPH_STARTED_MS
fi
scripts/echo-nginx.sh up >/dev/null
# shellcheck disable=SC1091
. .stack/env
PORT=${AIDEN_BENCH_PORT:-18383}
case " $* " in
  *chain3_history*)
    # Cost against history is measured from an empty graph: the bench instance, wiped.
    scripts/stack.sh wipe-graph bench >/dev/null
    scripts/stack.sh graph-up bench >/dev/null
    trap 'scripts/stack.sh graph-down bench >/dev/null 2>&1 || true' EXIT
    export AIDEN_NEO4J_URI=bolt://127.0.0.1:${AIDEN_STACK_BENCH_BOLT_PORT:-7689}
    echo "bench: chain3_history uses the empty Neo4j at $AIDEN_NEO4J_URI" >&2
    ;;
esac
if [ "${AIDEN_BENCH_QUEUE_TYPE:-classic}" = quorum ]; then
  # Queues of one type cannot be redeclared as the other: quorum queues get a vhost of their own.
  vhost=aiden-bench-quorum
  rabbitmqctl -q delete_vhost "$vhost" >/dev/null 2>&1 || true
  rabbitmqctl -q add_vhost "$vhost"
  rabbitmqctl -q set_permissions -p "$vhost" guest '.*' '.*' '.*'
  export AIDEN_AMQP_URI="${AIDEN_AMQP_URI%/*}/$vhost" AIDEN_QUEUE_TYPE=quorum
  echo "bench: quorum queues in the vhost $vhost" >&2
fi
export AIDEN_HTTP_ADDR=127.0.0.1:$PORT RUST_LOG=${RUST_LOG:-warn} AIDEN_INSTANCE_ID=bench-$PORT

echo "bench: building (release)" >&2
cargo build --release -p aiden -p aiden-bench --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
"$BIN/aiden" migrate >/dev/null

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # Gone before the next run starts: a pool still saying goodbye holds its metrics port, and
  # the next run's pool, refused that port, would leave its steps to wait for ever.
  for _ in $(seq 1 100); do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  case " $BENCH_ARGS " in *chain3_history*) scripts/stack.sh graph-down bench >/dev/null 2>&1 || true ;; esac
}
trap cleanup EXIT
# A server already on the port would be measured instead of this build: refuse.
if curl -s -o /dev/null "http://$AIDEN_HTTP_ADDR/healthz"; then
  echo "bench: something already listens on $AIDEN_HTTP_ADDR (set AIDEN_BENCH_PORT)" >&2
  exit 1
fi
serve_launched_ms=$(date +%s%3N)
"$BIN/aiden" serve >.stack/bench-serve.log 2>&1 &
pids+=($!)
WORKER_METRICS=127.0.0.1:$((PORT + 1))
"$BIN/aiden" worker --type rest_api --concurrency "${AIDEN_BENCH_WORKER_CONCURRENCY:-32}" \
  --metrics-addr "$WORKER_METRICS" >.stack/bench-worker.log 2>&1 &
pids+=($!)
case " $* " in
  *agent_loop* | *isolation*)
    # The agent scenario's model turns and the isolation scenario's backlog run on the
    # llm_call pool.
    "$BIN/aiden" worker --type llm_call --concurrency 8 >.stack/bench-worker-llm.log 2>&1 &
    pids+=($!)
    ;;
esac
# Its warm-up passes (AIDEN_ENGINE_WARM_UP_MS, 40 s by default) come before its port opens.
for _ in $(seq 1 240); do
  curl -fsS "http://$AIDEN_HTTP_ADDR/readyz" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS "http://$AIDEN_HTTP_ADDR/readyz" >/dev/null 2>&1 || {
  echo "bench: aiden serve did not become ready (see .stack/*serve.log)" >&2
  exit 1
}
# Measure only once this instance's engine drives runs: an engine that died without giving the
# lease up (a killed test binary) holds it for up to AIDEN_ENGINE_LEASE_MS more.
for _ in $(seq 1 60); do
  curl -fsS "http://$AIDEN_HTTP_ADDR/readyz" 2>/dev/null | grep -q "\"holder\":\"$AIDEN_INSTANCE_ID\"" && break
  sleep 0.5
done

# Counted as ours: the serve plans its hot statements before it opens its port (issue #49).
echo "bench: aiden serve ready and leading $(( $(date +%s%3N) - serve_launched_ms )) ms after its launch (warm-ups included)" >&2

# Per-step statement and message counts come from the server's and the pool's own counters.
"$BIN/aiden-bench" --server "http://$AIDEN_HTTP_ADDR" --token "$AIDEN_ADMIN_TOKEN" \
  --metrics-url "http://$AIDEN_HTTP_ADDR/metrics" --metrics-url "http://$WORKER_METRICS/metrics" "$@"
