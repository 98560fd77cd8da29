# A three-node RabbitMQ cluster on this machine, sourced by scripts/stack.sh:
# nodes aiden-mq1..3@localhost on AMQP ports 5682..5684 (Erlang distribution 25682..25684),
# data under .stack/mq-cluster/N, one Erlang cookie (the user's), no plugins (so no port is
# shared). Node 1 starts first; 2 and 3 join it. Every queue the runtime declares is then a
# quorum queue with three members (AIDEN_QUEUE_TYPE=quorum), and .stack/env lists every node
# in AIDEN_AMQP_URIS, which `aiden serve` and the workers try in turn.

CLUSTER_DIR="$STACK/mq-cluster"
CLUSTER_NODES=(1 2 3)

mq_node() { echo "aiden-mq$1@localhost"; }
mq_port() { echo $((5681 + $1)); }

start_mq_node() { # N
  local n=$1 dir="$CLUSTER_DIR/$1"
  listening "$(mq_port "$n")" && return 0
  mkdir -p "$dir"
  echo "[]." >"$dir/enabled_plugins"
  chown -R rabbitmq:rabbitmq "$dir" 2>/dev/null || true
  log "starting RabbitMQ node $(mq_node "$n") on $(mq_port "$n") (data in .stack/mq-cluster/$n)"
  RABBITMQ_NODENAME=$(mq_node "$n") RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT=$(mq_port "$n") RABBITMQ_DIST_PORT=$((25681 + n)) \
    RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log" \
    RABBITMQ_PID_FILE="$dir/pid" RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
    rabbitmq-server -detached
  for _ in $(seq 1 90); do
    if rabbitmqctl -q -n "$(mq_node "$n")" await_startup >/dev/null 2>&1 && listening "$(mq_port "$n")"; then
      return 0
    fi
    sleep 1
  done
  log "RabbitMQ node $n did not start within 90 s (log: .stack/mq-cluster/$n/log)"
  exit 1
}

cluster_env() {
  local uris=""
  for n in "${CLUSTER_NODES[@]}"; do
    uris="${uris:+$uris,}amqp://guest:guest@127.0.0.1:$(mq_port "$n")/%2f"
  done
  sed -i '/# cluster-up/d' "$STACK/env"
  cat >>"$STACK/env" <<EOT
export AIDEN_AMQP_URIS=\${AIDEN_AMQP_URIS:-$uris} # cluster-up
export AIDEN_QUEUE_TYPE=\${AIDEN_QUEUE_TYPE:-quorum} # cluster-up
EOT
}

# The nodes, joined into one cluster (no settings written).
cluster_nodes_up() {
  start_rabbitmq # the package, and the single node the tests use
  for n in "${CLUSTER_NODES[@]}"; do start_mq_node "$n"; done
  for n in 2 3; do
    if ! rabbitmqctl -q -n "$(mq_node "$n")" cluster_status 2>/dev/null | grep -q "$(mq_node 1)"; then
      log "joining $(mq_node "$n") to $(mq_node 1)"
      rabbitmqctl -q -n "$(mq_node "$n")" stop_app >/dev/null 2>&1
      rabbitmqctl -q -n "$(mq_node "$n")" join_cluster "$(mq_node 1)" >/dev/null 2>&1
      rabbitmqctl -q -n "$(mq_node "$n")" start_app >/dev/null 2>&1
    fi
  done
  touch "$CLUSTER_DIR/started"
}

cluster_up() {
  write_env
  cluster_nodes_up
  cluster_env
  log "RabbitMQ cluster up: $(rabbitmqctl -q -n "$(mq_node 1)" eval 'length(rabbit_nodes:all_running()).' 2>/dev/null) nodes running; .stack/env lists them in AIDEN_AMQP_URIS"
}

# The cluster for the test command's cluster fault test: its own virtual host (aiden-test),
# and .stack/env left alone, so the main job keeps its broker.
test_cluster_up() {
  cluster_nodes_up
  rabbitmqctl -q -n "$(mq_node 1)" add_vhost aiden-test >/dev/null 2>&1 || true
  rabbitmqctl -q -n "$(mq_node 1)" set_permissions -p aiden-test guest '.*' '.*' '.*' >/dev/null
  log "RabbitMQ cluster up for the tests (virtual host aiden-test on 5682-5684)"
}

stop_mq_node() { # N [KILL]
  local n=$1 pid
  if [ "${2:-}" = KILL ]; then
    pid=$(cat "$CLUSTER_DIR/$n/pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    log "RabbitMQ node $n killed"
  else
    rabbitmqctl -q -n "$(mq_node "$n")" stop >/dev/null 2>&1 || true
    log "RabbitMQ node $n stopped"
  fi
  for _ in $(seq 1 60); do
    listening "$(mq_port "$n")" || return 0
    sleep 0.5
  done
}

cluster_down() {
  [ -f "$CLUSTER_DIR/started" ] || return 0
  for n in 3 2 1; do stop_mq_node "$n"; done
  rm -f "$CLUSTER_DIR/started"
  [ -f "$STACK/env" ] && sed -i '/# cluster-up/d' "$STACK/env"
  log "RabbitMQ cluster stopped; .stack/env no longer lists it"
}
