#!/usr/bin/env bash
# The console's browser test: a real `aiden serve` with an llm_call worker pool and
# the scripted model, driven in Debian's headless Chromium over WebDriver (chromedriver) from
# Python (selenium from PyPI; no browser is downloaded). Screenshots of every screen go to
# $AIDEN_SCREENSHOTS (default target/console-screenshots).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck disable=SC1091
. .stack/env
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  echo "console: installing chromium and chromium-driver from Debian's packages"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null
fi
VENV=.stack/console-venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import selenium, PIL' 2>/dev/null; then
  echo "console: installing selenium and pillow into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet 'selenium==4.38.0' 'pillow==13.0.0'
fi
# AIDEN_CONSOLE_BUILD=release times the console against release binaries, as deployed
# (scripts/run.sh builds those); the default is the test command's debug build.
PROFILE=${AIDEN_CONSOLE_BUILD:-debug}
if [ "$PROFILE" = release ]; then cargo build --release --bins --quiet; else cargo build --bins --quiet; fi
# shellcheck source=scripts/lib/serve-for-test.sh
. scripts/lib/serve-for-test.sh
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE"
PORT=${AIDEN_CONSOLE_PORT:-18184}
MODEL_PORT=${AIDEN_CONSOLE_MODEL_PORT:-18185}
# AGT-14: the scripted model is priced, so answers cost money and the Users page has a spend to
# show: $1,000 per million input tokens and $2,000 per million output (a turn's 10 + 5: $0.02).
export AIDEN_MODEL_PRICES=${AIDEN_MODEL_PRICES:-'{"scripted": {"inputPerMillion": 1000, "outputPerMillion": 2000}}'}
serve_for_test "$PORT" llm_call
# 120 ms between streamed words: slow enough to see an answer being written.
track model "$TARGET/aiden-scripted-model" "127.0.0.1:$MODEL_PORT" 120
SHOTS=${AIDEN_SCREENSHOTS:-${CARGO_TARGET_DIR:-$ROOT/target}/console-screenshots}
if ! SE_OFFLINE=true AIDEN_SERVER=$URL AIDEN_MODEL_URL="http://127.0.0.1:$MODEL_PORT/v1" \
    AIDEN_SCREENSHOTS=$SHOTS "$VENV/bin/python" tests/console/test_console.py; then
  tail -n 30 "$WORK/serve.log" "$WORK/worker.log"
  exit 1
fi
echo "console: screenshots in $SHOTS"
