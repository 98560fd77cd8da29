#!/usr/bin/env bash
# Contract fuzzing: schemathesis against a real `aiden serve`'s /openapi.json, with
# an admin token and then a user token, stateful links included; then `aiden check`.
#   scripts/fuzz.sh           the long run: every check, >= 10,000 requests
#   scripts/fuzz.sh --short   the run in scripts/test.sh: a fixed seed, 5 cases per
#                             operation, every check but the two that judge which data is
#                             valid (positive/negative_data_acceptance): those depend on what
#                             earlier tests left in the graph, so they run in the long run
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODE=${1:-long}
# shellcheck disable=SC1091
. .stack/env
VENV=.stack/fuzz-venv
if [ ! -x "$VENV/bin/st" ]; then
  echo "fuzz: installing schemathesis into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet 'schemathesis==4.32.5'
fi
cargo build --bin aiden --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/aiden"
PORT=${AIDEN_FUZZ_PORT:-18182}
export AIDEN_HTTP_ADDR=127.0.0.1:$PORT
# At the default settings, as a user would run it: the failed-authentication throttle (USR-4)
# is on; the fuzzer's unknown tokens get 401, then 429, and never hold up its valid one.
LOG=$(mktemp)
"$BIN" serve >"$LOG" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -f "$LOG"' EXIT
URL=http://127.0.0.1:$PORT
for _ in $(seq 1 240); do
  curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
  sleep 0.5
done
export AIDEN_SERVER=$URL AIDEN_TOKEN=$AIDEN_ADMIN_TOKEN
"$BIN" apply -f seed/ >/dev/null
USER_TOKEN=$(curl -fsS -X POST "$URL/v1/users" -H "Authorization: Bearer $AIDEN_ADMIN_TOKEN" \
  -H 'content-type: application/json' -d "{\"name\": \"fuzz user $(date +%s%N)\", \"role\": \"user\"}" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')

if [ "$MODE" = --short ]; then
  ARGS=(--max-examples 5 --seed 13 --workers 1 --phases coverage,fuzzing,stateful
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,unsupported_method,allow_header_conformance,missing_required_header,use_after_free,ensure_resource_availability)
else
  ARGS=(--max-examples 100 --workers 2 --phases examples,coverage,fuzzing,stateful --checks all)
fi
# The memory upkeep settings are global and the fuzzer may change them: put them back after.
SETTINGS=$(curl -fsS "$URL/v1/settings" -H "Authorization: Bearer $AIDEN_ADMIN_TOKEN")
status=0
for who in admin user; do
  token=$AIDEN_ADMIN_TOKEN
  [ "$who" = user ] && token=$USER_TOKEN
  echo "fuzz: $MODE run as $who"
  "$VENV/bin/st" --config-file scripts/schemathesis.toml run "$URL/openapi.json" \
    -H "Authorization: Bearer $token" --suppress-health-check all --no-color \
    "${ARGS[@]}" >"$LOG.$who" 2>&1 || status=1
  sed -n '/SUMMARY/,$p' "$LOG.$who"
  if grep -q '^\[5[0-9][0-9]\]' "$LOG.$who"; then
    echo "fuzz: a 5xx answer (see above)" >&2
    status=1
  fi
  # The whole report stays in .stack/ for a look at every failure.
  cp "$LOG.$who" ".stack/fuzz-$MODE-$who.log"
  [ $status = 0 ] || echo "fuzz: every failure in .stack/fuzz-$MODE-$who.log" >&2
  rm -f "$LOG.$who"
done
put_settings() {
  curl -fsS -o /dev/null -X PATCH "$URL/v1/settings" -H "Authorization: Bearer $AIDEN_ADMIN_TOKEN" \
    -H 'content-type: application/json' -d "$1"
}
# A Process the settings named may have been deleted by the fuzzer: then the numbers only.
put_settings "$SETTINGS" 2>/dev/null ||
  put_settings "$(echo "$SETTINGS" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: v for k, v in d.items() if not k.endswith("ProcessId")}))')" ||
  echo "fuzz: the settings could not be put back" >&2
"$BIN" check
exit $status
