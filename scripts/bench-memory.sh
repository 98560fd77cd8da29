#!/usr/bin/env bash
# Memory upkeep's report: a release `aiden serve` with its upkeep loop, one llm_call
# worker pool and the scripted model; `aiden-bench-memory` builds a --turns conversation with
# and without compression and prints working memory (tokens) at the end and on average, the
# number of compressions and the lag from crossing the budget to the Summary being used.
#   scripts/bench-memory.sh [--turns 500] [--budget 4000] [--pause-ms 20]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/stack.sh up >/dev/null
# shellcheck disable=SC1091
. .stack/env
PORT=${AIDEN_BENCH_PORT:-18386}
MODEL_PORT=${AIDEN_BENCH_MODEL_PORT:-18387}
export AIDEN_HTTP_ADDR=127.0.0.1:$PORT RUST_LOG=${RUST_LOG:-warn}

echo "bench: building (release)" >&2
cargo build --release -p aiden -p aiden-bench -p aiden-tests --bin aiden --bin aiden-bench-memory \
  --bin aiden-scripted-model --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
"$BIN/aiden" migrate >/dev/null

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
if curl -s -o /dev/null "http://$AIDEN_HTTP_ADDR/healthz"; then
  echo "bench: something already listens on $AIDEN_HTTP_ADDR (set AIDEN_BENCH_PORT)" >&2
  exit 1
fi
"$BIN/aiden" serve >.stack/bench-memory-serve.log 2>&1 &
PIDS+=($!)
"$BIN/aiden" worker --type llm_call >.stack/bench-memory-worker.log 2>&1 &
PIDS+=($!)
"$BIN/aiden-scripted-model" "127.0.0.1:$MODEL_PORT" 0 >.stack/bench-memory-model.log 2>&1 &
PIDS+=($!)
for _ in $(seq 1 240); do
  curl -fsS "http://$AIDEN_HTTP_ADDR/readyz" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS "http://$AIDEN_HTTP_ADDR/readyz" >/dev/null 2>&1 || {
  echo "bench: aiden serve did not become ready (see .stack/bench-memory-serve.log)" >&2
  exit 1
}

"$BIN/aiden-bench-memory" --server "http://$AIDEN_HTTP_ADDR" --token "$AIDEN_ADMIN_TOKEN" \
  --model "http://127.0.0.1:$MODEL_PORT/v1" "$@"
