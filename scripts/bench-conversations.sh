#!/usr/bin/env bash
# The conversation benchmark: one conversation 1,000 turns deep with 3 alternatives
# per turn, built through the public API of a release `aiden serve` on the local stack; prints
# p50/p99 per operation (append, add alternative, switch, working memory at depth 10/100/1000,
# tree). No workers are needed: every turn is a user turn.
#   scripts/bench-conversations.sh [--depth 1000] [--alternatives 3] [--switches 300] …
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/stack.sh up >/dev/null
# shellcheck disable=SC1091
. .stack/env
PORT=${AIDEN_BENCH_PORT:-18384}
export AIDEN_HTTP_ADDR=127.0.0.1:$PORT RUST_LOG=${RUST_LOG:-warn}

echo "bench: building (release)" >&2
cargo build --release -p aiden -p aiden-bench --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
"$BIN/aiden" migrate >/dev/null

pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; }
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
