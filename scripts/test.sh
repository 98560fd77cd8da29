#!/usr/bin/env bash
# The whole test suite: starts the local stack if needed, then unit + integration tests against
# the real Bolt server and RabbitMQ, the seed round trip through the real binary, and the
# compose file check.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# The wall time of the whole command, printed at the end (docs/dev/performance.md keeps them).
STARTED=$SECONDS
# Each phase's line says when it began, so a slower run shows where its time went.
phase() { echo "test: [$((SECONDS - STARTED)) s] $*"; }

# A clean run needs about 3.5 GB (target directory and .stack/); say what the disk has, so a
# run that fails for want of it says so near the top of its log.
echo "test: $(df -Pk "$ROOT" | awk 'NR==2 {printf "%.1f GB", $4 / 1048576}') free on the checkout's disk"
# A fresh clone (no .stack/ yet, as .ci/run has it) first takes a newcomer's path: the main
# job's RabbitMQ cluster from nothing, which once failed there (issue #48: a directory the
# rabbitmq user could not enter), then stopped, so .stack/env lists no cluster. Only when no
# cluster node runs: one from another checkout would make the start a no-op, and its stop theirs.
if [ ! -e .stack ] && ! grep -q '^amqp cluster node' <<<"$(scripts/stack.sh status)"; then
  phase "a fresh clone's first command: scripts/stack.sh cluster-up, then cluster-down"
  scripts/stack.sh cluster-up
  scripts/stack.sh cluster-down
fi
# The tests' own Neo4j instance (127.0.0.1:7688, .stack/neo4j-test) and RabbitMQ virtual host:
# a stack that scripts/run.sh started keeps running beside them, untouched.
scripts/stack.sh test-up
# A three-node RabbitMQ cluster for the cluster fault test (tests/faults/cluster.rs); the other
# tests keep the single node.
scripts/stack.sh test-cluster-up
# graphiti-core in .stack/graphiti-venv: the knowledge tests start their own Graphiti service.
scripts/graphiti.sh install
# shellcheck disable=SC1091
. .stack/env
# shellcheck disable=SC1091
. .stack/test-env

phase "cargo fmt --check, clippy -D warnings"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

# Cypher stays Neo4j 5: Neo4j's own parser and semantic analysis over every
# statement, before it ever reaches the server (tools/cypher-lint, the repository's own).
phase "cypher-lint cypher/ (Neo4j 5 parser and semantic analysis)"
tools/cypher-lint/cypher-lint cypher/

# The recall corpora's own rules (shape; no question shares a content word with its fact).
phase "recall corpora: shape and paraphrase rules"
python3 tests/knowledge/recall_corpus_check.py --words-only
python3 tests/knowledge/twins_corpus_check.py --words-only

phase "cargo test: build the test binaries"
cargo test --workspace --no-run --quiet
phase "cargo test: run (unit + integration against the local stack)"
# Every answered request's route and status, for the status coverage report below.
AIDEN_STATUS_LOG=$(mktemp)
export AIDEN_STATUS_LOG
# What the secrets scan searches (tests/src/scan.rs): response bodies, SSE streams, logs and
# the Secret values the tests stored.
AIDEN_SCAN_DIR=$(mktemp -d)
export AIDEN_SCAN_DIR
date -u +%Y-%m-%dT%H:%M:%S.000Z >"$AIDEN_SCAN_DIR/started-at"
cargo test --workspace --quiet
phase "secrets scan (no Secret plaintext or ciphertext in responses, SSE, logs, queues or the graph)"
# The scanner cargo test just built (cargo run would resolve features anew and rebuild).
"${CARGO_TARGET_DIR:-target}/debug/aiden-secrets-scan" "$AIDEN_SCAN_DIR"
rm -rf "$AIDEN_SCAN_DIR"
unset AIDEN_SCAN_DIR
cargo run --bin aiden --quiet -- openapi >"$AIDEN_STATUS_LOG.openapi.json"
phase "documented statuses the suite never produced (docs/api.md says why)"
python3 scripts/status-coverage.py "$AIDEN_STATUS_LOG.openapi.json" "$AIDEN_STATUS_LOG"
rm -f "$AIDEN_STATUS_LOG" "$AIDEN_STATUS_LOG.openapi.json"
unset AIDEN_STATUS_LOG

phase "the Graphiti service against the scripted LLM (workers/graphiti/smoke_test.py)"
scripts/graphiti.sh smoke

phase "contract fuzzing, short (schemathesis against /openapi.json; the long run is scripts/fuzz.sh)"
scripts/fuzz.sh --short

phase "a client generated from /openapi.json (openapi-python-client) defines, runs and watches a Process"
scripts/client-test.sh

phase "the web console in headless Chromium (branch a conversation, watch a run, the catalog)"
scripts/console-test.sh

phase "seed round trip (apply twice, audit)"
scripts/e2e-seed.sh

phase "compose.yaml"
scripts/check-compose.sh

echo "test: all passed in $((SECONDS - STARTED)) s"
