#!/usr/bin/env bash
# `aiden apply -f seed/` through a real `aiden serve`, twice: the first loads everything, the
# second must report no changes; then `aiden check` must find no violations.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck disable=SC1091
. .stack/env
cargo build --bin aiden --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/aiden"
PORT=${AIDEN_E2E_PORT:-18181}
export AIDEN_HTTP_ADDR=127.0.0.1:$PORT
LOG=$(mktemp)
"$BIN" serve >"$LOG" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 240); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.5
done
export AIDEN_SERVER=http://127.0.0.1:$PORT AIDEN_TOKEN=$AIDEN_ADMIN_TOKEN
"$BIN" apply -f seed/ >/dev/null
second=$("$BIN" apply -f seed/)
echo "$second" | tail -1
if ! echo "$second" | tail -1 | grep -q ' 0 created, 0 updated'; then
  echo "$second"
  echo "e2e-seed: the second apply changed something" >&2
  exit 1
fi
"$BIN" check
if grep -qiE 'local-dev-key|'"${AIDEN_NEO4J_PASSWORD}" "$LOG"; then
  echo "e2e-seed: a secret value appeared in the server log" >&2
  exit 1
fi
echo "e2e-seed: ok"
