#!/usr/bin/env bash
# The main job on the local stack (Neo4j on 127.0.0.1:7687, RabbitMQ): install/start the stack,
# build, migrate, start the API, load seed/ through it, and print where everything is.
# Re-runnable: an API this script started earlier is restarted on the new build. The test suite
# has a Neo4j of its own, so both can run side by side.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/stack.sh up
# The echo endpoint the seed's REST tool (and the benchmark) call.
scripts/echo-nginx.sh up
# shellcheck disable=SC1091
. .stack/env
# The knowledge layer: Graphiti (graphiti-core on the same Neo4j) extracts with the LLM you configured
# (AIDEN_GRAPHITI_LLM_BASE_URL, else an explicitly set OpenAI-compatible AIDEN_LLM_ENDPOINT);
# with none, Episodes are still saved and bound, and extraction is reported as skipped.
if [ -z "${AIDEN_GRAPHITI_LLM_BASE_URL:-}" ] && [ -n "${AIDEN_LLM_ENDPOINT:-}" ] \
   && [ "${AIDEN_LLM_API:-openai}" != anthropic ]; then
  export AIDEN_GRAPHITI_LLM_BASE_URL="$AIDEN_LLM_ENDPOINT"
  export AIDEN_GRAPHITI_LLM_MODEL="${AIDEN_GRAPHITI_LLM_MODEL:-${AIDEN_LLM_MODEL:-}}"
  export AIDEN_GRAPHITI_LLM_API_KEY="${AIDEN_GRAPHITI_LLM_API_KEY:-${AIDEN_LLM_API_KEY:-none}}"
fi
scripts/graphiti.sh up
export AIDEN_HTTP_ADDR=${AIDEN_HTTP_ADDR:-127.0.0.1:8080}

echo "run: building aiden (release)"
cargo build --release -p aiden --quiet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/aiden"

"$BIN" migrate

if [ -f .stack/serve.pid ] && kill -0 "$(cat .stack/serve.pid)" 2>/dev/null; then
  kill "$(cat .stack/serve.pid)" && sleep 1
fi
nohup "$BIN" serve >.stack/serve.log 2>&1 &
echo $! >.stack/serve.pid
URL="http://$AIDEN_HTTP_ADDR"
for _ in $(seq 1 240); do
  curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS "$URL/readyz" >/dev/null || { tail -20 .stack/serve.log; echo "run: the API did not become ready" >&2; exit 1; }

# One worker pool per operation type (scale with AIDEN_WORKER_CONCURRENCY or more processes),
# and the Graphiti ingestion pool (`episode`), each with its own metrics address
# (AIDEN_METRICS_PORT_BASE, default 9101, then +1 per pool) listed in .stack/prometheus.yml.
metrics_port=${AIDEN_METRICS_PORT_BASE:-9101}
targets=()
for type in $("$BIN" operation-types) episode; do
  pidfile=.stack/worker-$type.pid
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")" && sleep 0.2
  fi
  nohup "$BIN" worker --type "$type" --metrics-addr "127.0.0.1:$metrics_port" \
    >".stack/worker-$type.log" 2>&1 &
  echo $! >"$pidfile"
  targets+=("\"127.0.0.1:$metrics_port\"")
  metrics_port=$((metrics_port + 1))
done
# A Prometheus scrape configuration for every target of the main job (docs/operations.md).
{
  echo "# Written by scripts/run.sh: every metrics endpoint of the main job."
  echo "scrape_configs:"
  echo "  - job_name: aiden-api"
  echo "    static_configs: [{targets: [\"$AIDEN_HTTP_ADDR\"]}]"
  echo "  - job_name: aiden-workers"
  echo "    static_configs: [{targets: [$(IFS=,; echo "${targets[*]}" | sed 's/,/, /g')]}]"
} >.stack/prometheus.yml

AIDEN_SERVER="$URL" AIDEN_TOKEN="$AIDEN_ADMIN_TOKEN" "$BIN" apply -f seed/
"$BIN" check
# Health-check every Service now, so the console shows which are reachable (a Service found
# down refuses runs until "Check now" on the Services page finds it up again).
echo "run: checking the Services"
for id in $(curl -fsS "$URL/v1/services?limit=500" -H "Authorization: Bearer $AIDEN_ADMIN_TOKEN" |
            python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)["items"]))'); do
  curl -fsS -X POST "$URL/v1/services/$id/health-check" -H "Authorization: Bearer $AIDEN_ADMIN_TOKEN" |
    python3 -c 'import json,sys; s=json.load(sys.stdin); print("  %s: %s %s" % (s["id"], s["status"], s.get("errorMessage") or ""))' ||
    echo "  $id: the check failed"
done

cat <<TXT

Aiden API: $URL   (logs: .stack/serve.log, stop: scripts/stop.sh)
Admin token: in .stack/env (AIDEN_ADMIN_TOKEN).  Try:

  . .stack/env
  curl -s $URL/v1/me -H "Authorization: Bearer \$AIDEN_ADMIN_TOKEN"
  curl -s $URL/v1/processes -H "Authorization: Bearer \$AIDEN_ADMIN_TOKEN"
  curl -s $URL/v1/processes/process-answer/versions -H "Authorization: Bearer \$AIDEN_ADMIN_TOKEN"
  curl -s -X POST $URL/v1/services/service-neo4j-graphiti/health-check -H "Authorization: Bearer \$AIDEN_ADMIN_TOKEN"
  curl -s $URL/openapi.json

Run a seeded process (a REST call to the local nginx echo) and follow it:

  R=\$(curl -s -X POST $URL/v1/processes/process-rest-echo/runs -H "Authorization: Bearer \$AIDEN_ADMIN_TOKEN" \\
        -H 'content-type: application/json' -d '{"inputs":{"query":"hello"}}' | sed 's/.*"runId":"\([^"]*\)".*/\1/')
  curl -sN $URL/v1/runs/\$R/events -H "Authorization: Bearer \$AIDEN_ADMIN_TOKEN"
  curl -s $URL/v1/workers -H "Authorization: Bearer \$AIDEN_ADMIN_TOKEN"

Worker pools: .stack/worker-<type>.log (the Graphiti ingestion pool: worker-episode.log; their
metrics and the API's are listed for Prometheus in .stack/prometheus.yml; the
Graphiti service: .stack/graphiti.log). The LLM tools call AIDEN_LLM_ENDPOINT (any
OpenAI-compatible server; see README "LLM provider").
TXT
