#!/usr/bin/env bash
# The soak: 2 minutes of mixed load (Process runs, agent runs calling a Tool,
# conversations answered by agent turns, on the scripted model) against two `aiden serve`
# instances and the worker pools, while 20 SIGKILLs hit random ones and RabbitMQ and Neo4j
# are each restarted once. Prints runs lost or stuck, step results recorded twice,
# Alternatives left generating and `aiden check`'s verdict; exits non-zero unless all are 0.
#   scripts/soak.sh [SECONDS] [KILLS]      (SOAK_SEED=N repeats a run's random choices)
#   scripts/soak.sh --cluster [SECONDS] [KILLS]
#       the same against the three-node RabbitMQ cluster (started if needed, its own virtual
#       host aiden-soak, quorum queues), with RabbitMQ nodes SIGKILLed twice and Neo4j once
# Uses the tests' Neo4j instance and RabbitMQ virtual host: not while the test suite runs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

if [ "${1:-}" = --cluster ]; then
  shift
  scripts/stack.sh cluster-up
  rabbitmqctl -q -n aiden-mq1@localhost add_vhost aiden-soak >/dev/null 2>&1 || true
  rabbitmqctl -q -n aiden-mq1@localhost set_permissions -p aiden-soak guest '.*' '.*' '.*' >/dev/null
  export SOAK_CLUSTER=1
fi
# shellcheck source=scripts/lib/on-test-stack.sh
. scripts/lib/on-test-stack.sh soak
cargo run --quiet -p aiden-tests --bin aiden-soak -- "$@"
