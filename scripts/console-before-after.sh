#!/usr/bin/env bash
# Before/after screenshots of issue #51's ten console problems, into docs/console/before-after/:
# starts a debug `aiden serve` on the tests' graph with an llm_call worker pool and the scripted
# model (as console-test.sh does), runs scripts/console-before-after.py, and stops them.
# AIDEN_PAIRS=01,05 makes only those pairs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck disable=SC1091
. .stack/env
# shellcheck disable=SC1091
. .stack/test-env
VENV=.stack/console-venv
cargo build --bins --quiet
# shellcheck source=scripts/lib/serve-for-test.sh
. scripts/lib/serve-for-test.sh
PORT=${AIDEN_CONSOLE_PORT:-18284}
MODEL_PORT=${AIDEN_CONSOLE_MODEL_PORT:-18285}
serve_for_test "$PORT" llm_call
# 40 ms between streamed words.
track model "$TARGET/aiden-scripted-model" "127.0.0.1:$MODEL_PORT" 40
if ! SE_OFFLINE=true AIDEN_SERVER=$URL AIDEN_MODEL_URL="http://127.0.0.1:$MODEL_PORT/v1" \
    AIDEN_BEFORE_PORT=${AIDEN_BEFORE_PORT:-18286} "$VENV/bin/python" scripts/console-before-after.py; then
  tail -n 30 "$WORK/serve.log" "$WORK/worker.log"
  exit 1
fi
