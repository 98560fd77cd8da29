# Sourced by the benchmarks that measure on an empty graph: `arcadedb_database create|drop NAME`
# creates or drops a database on the local ArcadeDB (scripts/stack.sh) through its HTTP API.
# Needs AIDEN_NEO4J_PASSWORD (from .stack/env).
arcadedb_database() {
  curl -fsS -u "root:$AIDEN_NEO4J_PASSWORD" -X POST \
    "http://127.0.0.1:${AIDEN_STACK_ARCADE_HTTP_PORT:-2480}/api/v1/server" \
    -d "{\"command\":\"$1 database $2\"}" >/dev/null
}
