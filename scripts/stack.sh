#!/usr/bin/env bash
# The local stack: ArcadeDB (Bolt, standing in for Neo4j) and RabbitMQ, as ../shared/local-stack.md
# describes. Idempotent: starts only what is not already listening, keeps data under .stack/,
# and `down` stops only what `up` started.
#
#   scripts/stack.sh up      install if needed, start, wait until ready, write .stack/env
#   scripts/stack.sh down    stop what `up` started
#   scripts/stack.sh restart stop what `up` started, then `up` (cold servers: scripts/bench.sh)
#   scripts/stack.sh status  what listens where
#   scripts/stack.sh env     print the AIDEN_* settings (source it: `. <(scripts/stack.sh env)`)
#   scripts/stack.sh graph-down | graph-up
#                            stop / start only the Bolt server `up` started (the graph outage
#                            test, issue #12)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STACK="$ROOT/.stack"
ARCADEDB_VERSION='26.10.2.post1'
BOLT_PORT=${AIDEN_STACK_BOLT_PORT:-7687}
ARCADE_HTTP_PORT=${AIDEN_STACK_ARCADE_HTTP_PORT:-2480}
AMQP_PORT=5672

log() { echo "stack: $*" >&2; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Settings the project reads; generated once into .stack/env, never committed.
write_env() {
  mkdir -p "$STACK"
  if [ ! -f "$STACK/env" ]; then
    umask 077
    local pw key admin
    pw=$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 20)
    key=$(head -c 32 /dev/urandom | base64)
    admin=$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 32)
    cat >"$STACK/env" <<EOF
export AIDEN_NEO4J_URI=\${AIDEN_NEO4J_URI:-bolt://127.0.0.1:$BOLT_PORT}
export AIDEN_NEO4J_USER=\${AIDEN_NEO4J_USER:-root}
export AIDEN_NEO4J_PASSWORD=\${AIDEN_NEO4J_PASSWORD:-$pw}
export AIDEN_NEO4J_DATABASE=\${AIDEN_NEO4J_DATABASE:-neo4j}
export AIDEN_AMQP_URI=\${AIDEN_AMQP_URI:-amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f}
export AIDEN_MASTER_KEY=\${AIDEN_MASTER_KEY:-$key}
export AIDEN_ADMIN_TOKEN=\${AIDEN_ADMIN_TOKEN:-$admin}
EOF
  fi
}

arcadedb_home() {
  "$STACK/venv/bin/python" -c 'import arcadedb_embedded,os;print(os.path.dirname(arcadedb_embedded.__file__))'
}

start_arcadedb() {
  if listening "$BOLT_PORT"; then
    log "a Bolt server already listens on $BOLT_PORT; using it"
    return
  fi
  if ! "$STACK/venv/bin/python" -c 'import arcadedb_embedded' 2>/dev/null; then
    log "installing ArcadeDB $ARCADEDB_VERSION from PyPI into .stack/venv"
    python3 -m venv "$STACK/venv"
    "$STACK/venv/bin/pip" install -q "arcadedb-embedded==$ARCADEDB_VERSION"
  fi
  # shellcheck disable=SC1091
  . "$STACK/env"
  local home
  home=$(arcadedb_home)
  mkdir -p "$STACK/arcadedb/databases"
  log "starting ArcadeDB (Bolt 127.0.0.1:$BOLT_PORT)"
  # ArcadeDB writes ./log relative to its working directory: keep it under .stack/.
  cd "$STACK"
  nohup "$home/jre/bin/java" ${AIDEN_STACK_JAVA_OPTS:--Xmx2g} -cp "$home/jars/*" \
    -Darcadedb.server.rootPassword="$AIDEN_NEO4J_PASSWORD" \
    -Darcadedb.server.rootPath="$STACK/arcadedb" \
    -Darcadedb.server.databaseDirectory="$STACK/arcadedb/databases" \
    -Darcadedb.server.plugins=Bolt:com.arcadedb.bolt.BoltProtocolPlugin \
    -Darcadedb.bolt.port="$BOLT_PORT" -Darcadedb.bolt.host=127.0.0.1 \
    -Darcadedb.server.httpIncomingPort="$ARCADE_HTTP_PORT" -Darcadedb.server.httpIncomingHost=127.0.0.1 \
    "-Darcadedb.server.defaultDatabases=$AIDEN_NEO4J_DATABASE[root]" \
    com.arcadedb.server.ArcadeDBServer >"$STACK/arcadedb.log" 2>&1 &
  echo $! >"$STACK/arcadedb.pid"
  cd "$ROOT"
  for _ in $(seq 1 120); do
    if grep -q 'ArcadeDB Server started' "$STACK/arcadedb.log" 2>/dev/null && listening "$BOLT_PORT"; then
      log "ArcadeDB ready"
      return
    fi
    if ! kill -0 "$(cat "$STACK/arcadedb.pid")" 2>/dev/null; then
      tail -20 "$STACK/arcadedb.log" >&2
      log "ArcadeDB exited during start"
      exit 1
    fi
    sleep 1
  done
  log "ArcadeDB did not start within 120 s (see .stack/arcadedb.log)"
  exit 1
}

start_rabbitmq() {
  if listening "$AMQP_PORT"; then
    log "RabbitMQ already listens on $AMQP_PORT; using it"
    return
  fi
  if ! command -v rabbitmq-server >/dev/null; then
    log "installing rabbitmq-server from Debian's packages"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q rabbitmq-server >/dev/null
  fi
  mkdir -p "$STACK/rabbitmq"
  chown -R rabbitmq:rabbitmq "$STACK/rabbitmq" 2>/dev/null || true
  log "starting RabbitMQ (data in .stack/rabbitmq)"
  RABBITMQ_MNESIA_BASE="$STACK/rabbitmq/mnesia" RABBITMQ_LOG_BASE="$STACK/rabbitmq/log" \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 rabbitmq-server -detached
  touch "$STACK/rabbitmq.started"
  for _ in $(seq 1 60); do
    if rabbitmq-diagnostics -q ping >/dev/null 2>&1 && listening "$AMQP_PORT"; then
      log "RabbitMQ ready"
      return
    fi
    sleep 1
  done
  log "RabbitMQ did not start within 60 s"
  exit 1
}

# The test suites get their own RabbitMQ virtual host, so a stack serving on `/` (scripts/run.sh)
# never takes their jobs, nor they its. The harness reads the URI from .stack/test-amqp-uri.
ensure_test_vhost() {
  command -v rabbitmqctl >/dev/null || return 0
  rabbitmqctl -q list_vhosts 2>/dev/null | grep -qx aiden-test ||
    rabbitmqctl -q add_vhost aiden-test >/dev/null 2>&1 || return 0
  rabbitmqctl -q set_permissions -p aiden-test guest '.*' '.*' '.*' >/dev/null 2>&1 || return 0
  echo "amqp://guest:guest@127.0.0.1:$AMQP_PORT/aiden-test" >"$STACK/test-amqp-uri"
}

# Stops the ArcadeDB that 'up' started and waits until it has exited (its port is free).
stop_arcadedb() {
  local pid
  pid=$(cat "$STACK/arcadedb.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  rm -f "$STACK/arcadedb.pid"
  log "ArcadeDB stopped"
}

stop_rabbitmq() {
  [ -f "$STACK/rabbitmq.started" ] || return 0
  rabbitmqctl -q stop >/dev/null 2>&1 || true
  for _ in $(seq 1 60); do
    listening "$AMQP_PORT" || break
    sleep 0.5
  done
  rm -f "$STACK/rabbitmq.started"
  log "RabbitMQ stopped"
}

up() {
  write_env
  start_arcadedb
  start_rabbitmq
  ensure_test_vhost
}

case "${1:-up}" in
  up)
    up
    ;;
  down)
    [ -f "$STACK/arcadedb.pid" ] && stop_arcadedb
    stop_rabbitmq
    ;;
  restart)
    # Both servers started afresh (a cold JVM: scripts/bench.sh measures on a stack it has
    # just started, as the peers' rules ask).
    [ -f "$STACK/arcadedb.pid" ] && stop_arcadedb
    stop_rabbitmq
    up
    ;;
  graph-down)
    [ -f "$STACK/arcadedb.pid" ] || { log "no ArcadeDB started by 'up' to stop"; exit 1; }
    stop_arcadedb
    ;;
  graph-up)
    write_env
    start_arcadedb
    ;;
  status)
    listening "$BOLT_PORT" && echo "bolt: up on $BOLT_PORT" || echo "bolt: down"
    listening "$AMQP_PORT" && echo "amqp: up on $AMQP_PORT" || echo "amqp: down"
    ;;
  env)
    write_env
    cat "$STACK/env"
    ;;
  *)
    echo "usage: $0 up|down|status|env" >&2
    exit 2
    ;;
esac
