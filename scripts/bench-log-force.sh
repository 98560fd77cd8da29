#!/usr/bin/env bash
# How Neo4j forces its transaction log under the execution benchmark (issue #35): the graph
# server's commits against its fdatasync/fsync calls while `scripts/bench.sh` runs on the running
# main instance (AIDEN_BENCH_REUSE_STACK=1). Commits are the difference of the last committed
# transaction id at two `CALL db.checkpoint()`s (Community has no transaction metrics); forces
# are counted by the kernel's syscall tracepoints (`perf stat`, no slowdown of the JVM).
# Prints one JSON line: {commits, forces, commits_per_force, steps, commits_per_step}.
#   scripts/bench-log-force.sh [--scenarios chain3] [--warmup 200] [--scale 1]
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
LOG=.stack/neo4j/logs/debug.log

# The transaction id a checkpoint just recorded (the last committed one).
checkpoint_tx() {
  "$PY" - <<'PY'
import os
from neo4j import GraphDatabase
with GraphDatabase.driver(os.environ["AIDEN_NEO4J_URI"],
                          auth=(os.environ["AIDEN_NEO4J_USER"], os.environ["AIDEN_NEO4J_PASSWORD"])) as d:
    d.execute_query("CALL db.checkpoint()", database_=os.environ.get("AIDEN_NEO4J_DATABASE", "neo4j"))
PY
  grep 'db.checkpoint() procedure" @ txId' "$LOG" | tail -1 | sed 's/.*@ txId: \([0-9]*\).*/\1/'
}

args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--scenarios chain3 --warmup 200)
before=$(checkpoint_tx)
perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync -p "$PID" \
  -o .stack/bench-log-force.perf &
perf_pid=$!
sleep 0.5
AIDEN_BENCH_REUSE_STACK=1 scripts/bench.sh "${args[@]}" | tee .stack/bench-log-force.jsonl
kill -INT "$perf_pid"
wait "$perf_pid" 2>/dev/null || true
after=$(checkpoint_tx)
forces=$(awk -F, '/syscalls:sys_enter_f/ {n += $1} END {print n + 0}' .stack/bench-log-force.perf)
warmup=1000
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[$i]}" = --warmup ] && warmup=${args[$((i + 1))]}
done
# Steps executed: the measured ones plus the warm-up runs (each workload once).
python3 -c '
import json, sys
commits, forces, warmup = (int(x) for x in sys.argv[2:5])
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
steps = sum(r["workflows"] * r["steps_per_workflow"] + warmup * r["steps_per_workflow"] for r in rows)
print(json.dumps({"measure": "log_force", "commits": commits, "forces": forces,
  "commits_per_force": round(commits / forces, 2) if forces else None,
  "steps": steps, "commits_per_step": round(commits / steps, 2) if steps else None}))' \
  .stack/bench-log-force.jsonl "$((after - before))" "$forces" "$warmup"
