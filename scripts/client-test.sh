#!/usr/bin/env bash
# The generated-client test: generate a Python client from `aiden openapi` with
# openapi-python-client (PyPI), then use only that client against a real `aiden serve` and a
# graph_query worker pool to define a Tool and a Process, run it, and read its events.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck disable=SC1091
. .stack/env
VENV=.stack/client-venv
if [ ! -x "$VENV/bin/openapi-python-client" ]; then
  echo "client: installing openapi-python-client into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet 'openapi-python-client==0.29.1'
fi
cargo build --bin aiden --quiet
# shellcheck source=scripts/lib/serve-for-test.sh
. scripts/lib/serve-for-test.sh
BIN=$TARGET/aiden

"$BIN" openapi >"$WORK/openapi.json"
printf 'post_hooks: []\n' >"$WORK/config.yaml"
# Any warning means part of the document could not be turned into code: a failure here.
if ! (cd "$WORK" && "$ROOT/$VENV/bin/openapi-python-client" generate --path openapi.json \
    --meta none --output-path aiden_client --config config.yaml >generate.log 2>&1) ||
  grep -qiE 'warning|unable to' "$WORK/generate.log"; then
  cat "$WORK/generate.log"
  echo "client: openapi-python-client could not generate a whole client" >&2
  exit 1
fi

serve_for_test "${AIDEN_CLIENT_PORT:-18183}" graph_query
AIDEN_SERVER=$URL AIDEN_TOKEN=$AIDEN_ADMIN_TOKEN "$BIN" apply -f seed/ >/dev/null
if ! PYTHONPATH="$WORK" AIDEN_SERVER=$URL "$VENV/bin/python" tests/client/test_generated_client.py; then
  tail -n 30 "$WORK/serve.log" "$WORK/worker.log"
  exit 1
fi
