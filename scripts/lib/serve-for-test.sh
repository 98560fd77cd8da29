# Sourced by the test scripts that drive a real `aiden serve` from outside Rust
# (client-test.sh, console-test.sh): `serve_for_test PORT TYPE` starts the API on PORT and one
# worker pool of TYPE, logs in $WORK, and waits for readiness; everything started with `track`
# is stopped, and $WORK removed, on exit. Sets TARGET (the debug binaries) and URL.
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# Runs a command in the background, logging to $WORK/NAME.log, stopped on exit.
track() {
  local name=$1
  shift
  "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
}

serve_for_test() {
  export AIDEN_HTTP_ADDR=127.0.0.1:$1
  # A test's serve: without the engine's 40 s of warm-up passes.
  export AIDEN_ENGINE_WARM_UP_MS=0
  track serve "$TARGET/aiden" serve
  track worker "$TARGET/aiden" worker --type "$2"
  URL=http://127.0.0.1:$1
  for _ in $(seq 1 60); do
    curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
    sleep 0.5
  done
}
