#!/usr/bin/env bash
# How Neo4j forces its transaction log under the execution benchmark: the graph
# server's commits against its fdatasync/fsync calls while `scripts/bench.sh` runs on the running
# main instance (AIDEN_BENCH_REUSE_STACK=1). Commits are those the stack's processes counted
# (`aiden_graph_commits_total`, the benchmark's `per_step.graph_commits`: Community has no
# transaction metrics of its own); forces are counted by the kernel's syscall tracepoints
# (`perf stat` on the Neo4j process, which does not slow the JVM down).
# Prints one JSON line: {steps, commits, forces, commits_per_force, commits_per_step,
# nodes_created_per_step, edges_created_per_step} (net of deletes; updates are not counted).
#   scripts/bench-log-force.sh [--scenarios chain3] [--warmup 0] [--scale 1]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

command -v perf >/dev/null || { echo "bench: perf is needed (apt-get install linux-perf)" >&2; exit 1; }
scripts/stack.sh up >/dev/null
scripts/graphiti.sh install >/dev/null # the venv with the official Python driver
# shellcheck disable=SC1091
. .stack/env
PY="$ROOT/.stack/graphiti-venv/bin/python"
PID=$(cat .stack/neo4j-main.pid)

# The graph's node and relationship counts (from Neo4j's count store), as "NODES RELS".
graph_counts() {
  "$PY" - <<'PY'
import os
from neo4j import GraphDatabase
db = os.environ.get("AIDEN_NEO4J_DATABASE", "neo4j")
with GraphDatabase.driver(os.environ["AIDEN_NEO4J_URI"],
                          auth=(os.environ["AIDEN_NEO4J_USER"], os.environ["AIDEN_NEO4J_PASSWORD"])) as d:
    nodes = d.execute_query("MATCH (n) RETURN count(n) AS c", database_=db).records[0]["c"]
    rels = d.execute_query("MATCH ()-[r]->() RETURN count(r) AS c", database_=db).records[0]["c"]
    print(nodes, rels)
PY
}

# No warm-up by default: everything the graph commits during the run is then the scenario's
# (plus a handful of definition writes).
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--scenarios chain3 --warmup 0)
read -r nodes0 rels0 < <(graph_counts)
perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync -p "$PID" \
  -o .stack/bench-log-force.perf &
perf_pid=$!
sleep 0.5
AIDEN_BENCH_REUSE_STACK=1 scripts/bench.sh "${args[@]}" | tee .stack/bench-log-force.jsonl
kill -INT "$perf_pid"
wait "$perf_pid" 2>/dev/null || true
read -r nodes1 rels1 < <(graph_counts)
forces=$(awk -F, '/syscalls:sys_enter_f/ {n += $1} END {print n + 0}' .stack/bench-log-force.perf)
python3 -c '
import json, sys
forces, nodes, rels = (int(x) for x in sys.argv[2:5])
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
steps = sum(r["workflows"] * r["steps_per_workflow"] for r in rows)
commits = round(sum(r["per_step"]["graph_commits"] * r["workflows"] * r["steps_per_workflow"] for r in rows))
print(json.dumps({"measure": "log_force", "steps": steps, "commits": commits, "forces": forces,
  "commits_per_force": round(commits / forces, 2) if forces else None,
  "commits_per_step": round(commits / steps, 2),
  "nodes_created_per_step": round(nodes / steps, 2),
  "edges_created_per_step": round(rels / steps, 2)}))' \
  .stack/bench-log-force.jsonl "$forces" "$((nodes1 - nodes0))" "$((rels1 - rels0))"
