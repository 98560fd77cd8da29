#!/usr/bin/env bash
# The benchmark's (and the seed's) HTTP echo endpoint: nginx from Debian's packages on
# 127.0.0.1:18080, `location /echo { return 200 '{"ok":true}'; }`.
#   scripts/echo-nginx.sh up|down
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD/.stack/nginx
PORT=${AIDEN_ECHO_PORT:-18080}
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"

up() {
  if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    $SUDO apt-get install -y -q nginx-light >/dev/null 2>&1 || $SUDO apt-get install -y -q nginx >/dev/null
    # Debian starts the packaged site on :80; we only want our own instance.
    $SUDO systemctl disable --now nginx >/dev/null 2>&1 || $SUDO service nginx stop >/dev/null 2>&1 || true
  fi
  if curl -fsS "http://127.0.0.1:$PORT/echo" >/dev/null 2>&1; then
    echo "echo endpoint already up on :$PORT"; return
  fi
  mkdir -p "$ROOT/logs" "$ROOT/tmp"
  cat > "$ROOT/nginx.conf" <<CONF
worker_processes 1;
pid $ROOT/nginx.pid;
error_log $ROOT/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $ROOT/tmp;
  proxy_temp_path $ROOT/tmp;
  fastcgi_temp_path $ROOT/tmp;
  uwsgi_temp_path $ROOT/tmp;
  scgi_temp_path $ROOT/tmp;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$PORT;
    default_type application/json;
    location /echo { return 200 '{"ok":true}'; }
  }
}
CONF
  /usr/sbin/nginx -c "$ROOT/nginx.conf" -p "$ROOT"
  for _ in $(seq 1 50); do
    curl -fsS "http://127.0.0.1:$PORT/echo" >/dev/null 2>&1 && { echo "echo endpoint up on :$PORT"; return; }
    sleep 0.1
  done
  echo "nginx did not start; see $ROOT/logs/error.log" >&2; exit 1
}

down() {
  [ -f "$ROOT/nginx.pid" ] && kill "$(cat "$ROOT/nginx.pid")" 2>/dev/null || true
  rm -f "$ROOT/nginx.pid"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
