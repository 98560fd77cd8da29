# Sourced by the scripts that load the tests' stack on their own (soak, overload): starts the
# tests' Neo4j if needed, reads .stack/env then .stack/test-env, builds `aiden`, and gives every
# spawned process a log file under .stack/$1-logs (kept for a look after a failure).
scripts/stack.sh test-up
# shellcheck disable=SC1091
. .stack/env
# shellcheck disable=SC1091
. .stack/test-env
cargo build --quiet --bin aiden
export AIDEN_CHILD_LOG_DIR="$ROOT/.stack/$1-logs"
rm -rf "$AIDEN_CHILD_LOG_DIR" && mkdir -p "$AIDEN_CHILD_LOG_DIR"
echo "$1: process logs in $AIDEN_CHILD_LOG_DIR"
