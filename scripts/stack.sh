#!/usr/bin/env bash
# The local stack: Neo4j Community 5.26 (from Maven Central, neo4j/pom.xml) and RabbitMQ (from
# Debian's packages). Idempotent: installs and starts only what is not already there, keeps data
# under .stack/, and `down` stops only what `up` started.
#
# Two Neo4j instances, because Community serves one user database: the main job's
# (127.0.0.1:7687, data in .stack/neo4j) and the tests' (127.0.0.1:7688, data in
# .stack/neo4j-test), so scripts/test.sh and scripts/run.sh can run side by side; the
# benchmarks that need an empty graph wipe and start a third (127.0.0.1:7689, .stack/neo4j-bench).
#
#   scripts/stack.sh up            install if needed, start Neo4j and RabbitMQ, write .stack/env
#   scripts/stack.sh test-up       the tests' Neo4j and RabbitMQ virtual host; writes .stack/test-env
#   scripts/stack.sh down          stop what `up` and `test-up` started
#   scripts/stack.sh restart       stop the main Neo4j and RabbitMQ, then `up` (cold servers:
#                                  scripts/bench.sh)
#   scripts/stack.sh graph-down [INSTANCE] | graph-up [INSTANCE]
#                                  stop (SIGTERM, clean) / start only one Neo4j instance (main,
#                                  test or bench; default $AIDEN_STACK_GRAPH, else main)
#   scripts/stack.sh graph-kill [INSTANCE]
#                                  SIGKILL one Neo4j instance (crash recovery on the next start)
#   scripts/stack.sh wipe-graph [INSTANCE]
#                                  stop one instance and delete its data (a fresh, empty graph)
#   scripts/stack.sh cluster-up    a three-node RabbitMQ cluster (ports 5682-5684, quorum queues);
#                                  .stack/env then lists its nodes in AIDEN_AMQP_URIS
#   scripts/stack.sh cluster-down  stop it; .stack/env no longer lists it
#   scripts/stack.sh test-cluster-up
#                                  the same nodes for the test command (virtual host aiden-test),
#                                  .stack/env untouched
#   scripts/stack.sh mq-kill N | mq-up N
#                                  SIGKILL / start one cluster node (1-3)
#   scripts/stack.sh status        what listens where
#   scripts/stack.sh env           print the AIDEN_* settings
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STACK="$ROOT/.stack"
NEO4J_LIB="$STACK/neo4j-lib"
AMQP_PORT=5672

log() { echo "stack: $*" >&2; }
# shellcheck source=scripts/lib/rabbit-cluster.sh
. "$ROOT/scripts/lib/rabbit-cluster.sh"
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The RabbitMQ servers run as the rabbitmq user, which must pass through .stack and
# .stack/mq-cluster to reach its data and log directories: made searchable whatever the umask,
# or a node dies before it can write a log (a fresh clone's `cluster-up` did, issue #48). The
# directories above .stack are not ours to change, so one that blocks the way is named at once
# rather than after a node's 90 s start timeout.
rabbitmq_dirs() {
  mkdir -p "$STACK" "$CLUSTER_DIR"
  chmod a+x "$STACK" "$CLUSTER_DIR"
  if [ "$(id -u)" = 0 ] && id rabbitmq >/dev/null 2>&1 &&
    ! runuser -u rabbitmq -- test -x "$CLUSTER_DIR"; then
    log "the rabbitmq user cannot enter $CLUSTER_DIR: every directory above it needs search permission (chmod a+x)"
    exit 1
  fi
}

# Per instance: bolt port, http port, data home, JVM heap.
instance() { # main|test|bench -> sets BOLT HTTP HOME_DIR HEAP NAME
  NAME=$1
  case "$1" in
    main)
      BOLT=${AIDEN_STACK_BOLT_PORT:-7687}
      HTTP=${AIDEN_STACK_NEO4J_HTTP_PORT:-7474}
      HOME_DIR="$STACK/neo4j"
      ;;
    test)
      BOLT=${AIDEN_STACK_TEST_BOLT_PORT:-7688}
      HTTP=${AIDEN_STACK_TEST_NEO4J_HTTP_PORT:-7475}
      HOME_DIR="$STACK/neo4j-test"
      ;;
    bench)
      # The benchmarks that measure on an empty graph wipe and start this one.
      BOLT=${AIDEN_STACK_BENCH_BOLT_PORT:-7689}
      HTTP=${AIDEN_STACK_BENCH_NEO4J_HTTP_PORT:-7476}
      HOME_DIR="$STACK/neo4j-bench"
      ;;
    *)
      log "unknown Neo4j instance '$1' (main, test or bench)"
      exit 2
      ;;
  esac
  HEAP=${AIDEN_STACK_NEO4J_HEAP:-2g}
}

# Settings the project reads; generated once into .stack/env, never committed.
write_env() {
  mkdir -p "$STACK"
  if [ ! -f "$STACK/env" ]; then
    local pw key admin
    pw=$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 20)
    key=$(head -c 32 /dev/urandom | base64)
    admin=$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 32)
    # Private from its first byte; the umask in a subshell, so the directories this process
    # makes afterwards keep the caller's.
    (
      umask 077
      cat >"$STACK/env" <<EOF
export AIDEN_NEO4J_URI=\${AIDEN_NEO4J_URI:-bolt://127.0.0.1:${AIDEN_STACK_BOLT_PORT:-7687}}
export AIDEN_NEO4J_USER=\${AIDEN_NEO4J_USER:-neo4j}
export AIDEN_NEO4J_PASSWORD=\${AIDEN_NEO4J_PASSWORD:-$pw}
export AIDEN_NEO4J_DATABASE=\${AIDEN_NEO4J_DATABASE:-neo4j}
export AIDEN_AMQP_URI=\${AIDEN_AMQP_URI:-amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f}
export AIDEN_MASTER_KEY=\${AIDEN_MASTER_KEY:-$key}
export AIDEN_ADMIN_TOKEN=\${AIDEN_ADMIN_TOKEN:-$admin}
EOF
    )
  fi
  # An .stack/env from the ArcadeDB stand-in named its user `root`; Neo4j's is `neo4j`.
  sed -i 's/AIDEN_NEO4J_USER:-root}/AIDEN_NEO4J_USER:-neo4j}/' "$STACK/env"
}

# The tests' settings, sourced after .stack/env (scripts/test.sh) and read by the test harness
# before it: their own Neo4j and RabbitMQ virtual host. Same password as the main instance.
write_test_env() {
  instance test
  (
    umask 077
    cat >"$STACK/test-env" <<EOF
export AIDEN_NEO4J_URI=bolt://127.0.0.1:$BOLT
export AIDEN_AMQP_URI=amqp://guest:guest@127.0.0.1:$AMQP_PORT/aiden-test
export AIDEN_STACK_GRAPH=test
export AIDEN_NEO4J_BROWSER_URL=http://127.0.0.1:$HTTP/browser/
unset AIDEN_AMQP_URIS AIDEN_QUEUE_TYPE
# Tests start aiden serve hundreds of times: without the engine's warm-up passes (40 s each).
export AIDEN_ENGINE_WARM_UP_MS=0
EOF
  )
}

# Neo4j's jars from Maven Central into .stack/neo4j-lib, once per version of neo4j/pom.xml.
install_neo4j() {
  local stamp="$NEO4J_LIB/.pom.sha256" want
  want=$(sha256sum "$ROOT/neo4j/pom.xml" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return
  fi
  command -v mvn >/dev/null || { log "Maven (mvn) is needed to fetch Neo4j; install it (apt-get install maven)"; exit 1; }
  log "fetching Neo4j's jars from Maven Central (neo4j/pom.xml) into .stack/neo4j-lib"
  rm -rf "$NEO4J_LIB"
  mvn -q -B -f "$ROOT/neo4j/pom.xml" dependency:copy-dependencies -DoutputDirectory="$NEO4J_LIB" >&2
  echo "$want" >"$stamp"
}

java_opts() {
  # Neo4j's own defaults from its neo4j.conf (server.jvm.additional), but -XX:+AlwaysPreTouch:
  # two instances share the machine and neither should commit its whole heap at start.
  # MaxTenuringThreshold=2: most of what survives a young collection here lives for minutes
  # (2 MB at every age up to 15), and G1 copied it up to 15 times; promoted after two, the
  # median young pause was a fifth to a half shorter (docs/dev/performance.md, twelfth round).
  echo "-Xms512m -Xmx$HEAP -XX:+UseG1GC -XX:MaxTenuringThreshold=2 -XX:-OmitStackTraceInFastThrow"
  # CICompilerCount=4 on up to four CPUs (the JVM's default there is 2-3; more CPUs get more):
  # on two CPUs the JVM starts one C2 compiler thread, whose queue takes minutes to drain
  # after a start (65 s of compile time in the first 54 s), so the hot path ran on C1 code
  # through the benchmark's first minute. Up to three C2 threads (started only while the queue
  # is long) finish it during the serve's warm-ups instead: Neo4j's JIT CPU per chain3 step a
  # third, chain3 +25 % (docs/dev/performance.md, sixteenth round).
  if [ "$(nproc)" -le 4 ]; then echo "-XX:CICompilerCount=4"; fi
  echo "-XX:+UnlockExperimentalVMOptions -XX:+TrustFinalNonStaticFields -XX:+DisableExplicitGC"
  echo "-Djdk.nio.maxCachedBufferSize=1024 -Dio.netty.tryReflectionSetAccessible=true"
  echo "-XX:+ExitOnOutOfMemoryError"
  echo "--add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED"
  echo "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang=ALL-UNNAMED"
  echo "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED"
  echo "${AIDEN_STACK_JAVA_OPTS:-}"
}

start_neo4j() { # main|test
  instance "$1"
  if listening "$BOLT"; then
    log "a Bolt server already listens on $BOLT; using it as the $NAME graph"
    return
  fi
  install_neo4j
  # shellcheck disable=SC1091
  . "$STACK/env"
  mkdir -p "$HOME_DIR/conf" "$HOME_DIR/data" "$HOME_DIR/logs" "$HOME_DIR/plugins"
  {
    cat "$ROOT/neo4j/neo4j.conf"
    echo
    echo "# This instance ($NAME), written by scripts/stack.sh"
    echo "server.bolt.listen_address=127.0.0.1:$BOLT"
    echo "server.bolt.advertised_address=127.0.0.1:$BOLT"
    echo "server.http.listen_address=127.0.0.1:$HTTP"
    echo "server.http.advertised_address=127.0.0.1:$HTTP"
  } >"$HOME_DIR/conf/neo4j.conf"
  export NEO4J_HOME="$HOME_DIR" NEO4J_CONF="$HOME_DIR/conf"
  local -a opts
  read -r -a opts <<<"$(java_opts | tr '\n' ' ')"
  if [ ! -d "$HOME_DIR/data/databases" ]; then
    # Before the first start only: the neo4j user's password (the server's auth is on).
    java -cp "$NEO4J_LIB/*" org.neo4j.cli.AdminTool dbms set-initial-password "$AIDEN_NEO4J_PASSWORD" >/dev/null
  fi
  log "starting Neo4j ($NAME: Bolt 127.0.0.1:$BOLT, HTTP 127.0.0.1:$HTTP, data in ${HOME_DIR#"$ROOT"/})"
  : >"$HOME_DIR/console.log"
  nohup java "${opts[@]}" -cp "$NEO4J_LIB/*" org.neo4j.server.CommunityEntryPoint \
    --home-dir="$HOME_DIR" --config-dir="$HOME_DIR/conf" --console-mode \
    >"$HOME_DIR/console.log" 2>&1 &
  echo $! >"$STACK/neo4j-$NAME.pid"
  for _ in $(seq 1 240); do
    if grep -q ' Started\.' "$HOME_DIR/console.log" 2>/dev/null && listening "$BOLT"; then
      log "Neo4j ($NAME) ready"
      return
    fi
    if ! kill -0 "$(cat "$STACK/neo4j-$NAME.pid")" 2>/dev/null; then
      tail -30 "$HOME_DIR/console.log" >&2
      log "Neo4j ($NAME) exited during start (see ${HOME_DIR#"$ROOT"/}/console.log and logs/debug.log)"
      exit 1
    fi
    sleep 0.5
  done
  log "Neo4j ($NAME) did not start within 120 s (see ${HOME_DIR#"$ROOT"/}/console.log)"
  exit 1
}

# Stops the Neo4j instance that this script started and waits until it has exited. SIGTERM is
# a clean shutdown (checkpoint, then close); `kill` sends SIGKILL (the crash tests).
stop_neo4j() { # main|test [TERM|KILL]
  instance "$1"
  local pidfile="$STACK/neo4j-$NAME.pid" pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill -"${2:-TERM}" "$pid" 2>/dev/null || true
  for _ in $(seq 1 240); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "Neo4j ($NAME) did not stop within 60 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 1
  fi
  rm -f "$pidfile"
  log "Neo4j ($NAME) stopped (${2:-TERM})"
}

start_rabbitmq() {
  if listening "$AMQP_PORT"; then
    return
  fi
  if ! command -v rabbitmq-server >/dev/null; then
    log "installing rabbitmq-server from Debian's packages"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q rabbitmq-server >/dev/null
  fi
  rabbitmq_dirs
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
# never takes their jobs, nor they its.
ensure_test_vhost() {
  command -v rabbitmqctl >/dev/null || return 0
  rabbitmqctl -q list_vhosts 2>/dev/null | grep -qx aiden-test ||
    rabbitmqctl -q add_vhost aiden-test >/dev/null 2>&1 || return 0
  rabbitmqctl -q set_permissions -p aiden-test guest '.*' '.*' '.*' >/dev/null 2>&1 || return 0
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
  start_neo4j main
  start_rabbitmq
  ensure_test_vhost
}

test_up() {
  write_env
  start_neo4j test
  start_rabbitmq
  ensure_test_vhost
  write_test_env
}

case "${1:-up}" in
  up) up ;;
  test-up) test_up ;;
  down)
    stop_neo4j main
    stop_neo4j test
    stop_neo4j bench
    cluster_down
    stop_rabbitmq
    ;;
  restart)
    # Started afresh (a cold JVM: scripts/bench.sh measures on a stack it has just started, as
    # the peers' rules ask).
    stop_neo4j main
    stop_rabbitmq
    up
    ;;
  cluster-up)
    rabbitmq_dirs
    cluster_up
    ;;
  test-cluster-up)
    rabbitmq_dirs
    test_cluster_up
    ;;
  cluster-down) cluster_down ;;
  mq-kill) stop_mq_node "${2:?node 1-3}" KILL ;;
  mq-up)
    rabbitmq_dirs
    start_mq_node "${2:?node 1-3}"
    ;;
  graph-down) stop_neo4j "${2:-${AIDEN_STACK_GRAPH:-main}}" TERM ;;
  graph-kill) stop_neo4j "${2:-${AIDEN_STACK_GRAPH:-main}}" KILL ;;
  graph-up)
    write_env
    start_neo4j "${2:-${AIDEN_STACK_GRAPH:-main}}"
    ;;
  wipe-graph)
    instance "${2:-${AIDEN_STACK_GRAPH:-main}}"
    stop_neo4j "$NAME" TERM
    rm -rf "$HOME_DIR"
    log "Neo4j ($NAME): data removed"
    ;;
  status)
    for i in main test bench; do
      instance "$i"
      listening "$BOLT" && echo "neo4j ($i): up on $BOLT" || echo "neo4j ($i): down"
    done
    listening "$AMQP_PORT" && echo "amqp: up on $AMQP_PORT" || echo "amqp: down"
    for n in "${CLUSTER_NODES[@]}"; do
      listening "$(mq_port "$n")" && echo "amqp cluster node $n: up on $(mq_port "$n")"
    done
    true
    ;;
  env)
    write_env
    cat "$STACK/env"
    ;;
  *)
    echo "usage: $0 up|test-up|down|restart|cluster-up|cluster-down|mq-kill|mq-up|graph-down|graph-kill|graph-up|wipe-graph|status|env" >&2
    exit 2
    ;;
esac
