#!/usr/bin/env bash
# Stops the API that scripts/run.sh started, then the stack services scripts/stack.sh started.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ -f .stack/serve.pid ]; then
  kill "$(cat .stack/serve.pid)" 2>/dev/null || true
  rm -f .stack/serve.pid
  echo "stop: API stopped"
fi
for pidfile in .stack/worker-*.pid; do
  [ -f "$pidfile" ] || continue
  kill "$(cat "$pidfile")" 2>/dev/null || true
  rm -f "$pidfile"
done
scripts/echo-nginx.sh down
scripts/graphiti.sh down
scripts/stack.sh down
