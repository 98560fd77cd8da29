#!/usr/bin/env bash
# Where the CPU of a `chain3` step goes, by part and by function. Runs the execution
# benchmark's chain3 long enough to sample its steady state (1,000 warm-up runs, then
# --scale 30: 15,000 runs), and once it is measuring, for --seconds (default 20) after 5 s:
#   - Neo4j with Java Flight Recorder (settings=profile: jdk.ExecutionSample of Java threads),
#   - `aiden serve` (API + engine) and the rest_api worker pool with `perf record`,
#   - every process's CPU over the same window (/proc, as the benchmark accounts it).
# Then prints the top functions of each part (self time, share of that part's samples).
# Recordings stay in .stack/profile-<time>/. One benchmark at a time (the machine has 2 cores).
#   scripts/bench-profile.sh [--seconds 20] [--scale 30]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECONDS_TO_SAMPLE=20
SCALE=30
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_TO_SAMPLE=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds N] [--scale X]" >&2; exit 2 ;;
  esac
done
command -v perf >/dev/null || { echo "bench-profile: needs perf (linux-perf)" >&2; exit 1; }
command -v jcmd >/dev/null || { echo "bench-profile: needs jcmd (the JDK)" >&2; exit 1; }
OUT=.stack/profile-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
scripts/bench.sh --scenarios chain3 --scale "$SCALE" >"$OUT/bench.json" 2>"$OUT/bench.err" &
bench=$!
trap 'kill "$bench" 2>/dev/null || true' EXIT
until grep -q "bench: measuring chain3" "$OUT/bench.err" 2>/dev/null; do
  kill -0 "$bench" 2>/dev/null || { cat "$OUT/bench.err" >&2; exit 1; }
  sleep 0.5
done
sleep 5
neo4j=$(cat .stack/neo4j-main.pid)
serve=$(pgrep -f "release/aiden serve" | head -1)
worker=$(pgrep -f "release/aiden worker --type rest_api" | head -1)
echo "bench-profile: sampling ${SECONDS_TO_SAMPLE}s (neo4j $neo4j, serve $serve, worker $worker)" >&2
cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A before
for p in "$neo4j" "$serve" "$worker"; do before[$p]=$(cpu_of "$p"); done
jcmd "$neo4j" JFR.start name=aiden settings=profile filename="$ROOT/$OUT/neo4j.jfr" \
  duration="${SECONDS_TO_SAMPLE}s" >/dev/null
perf record -q -F 499 -g -p "$serve,$worker" -o "$OUT/perf.data" -- sleep "$SECONDS_TO_SAMPLE" \
  2>/dev/null
ticks=$(getconf CLK_TCK)
for p in "$neo4j" "$serve" "$worker"; do
  echo "bench-profile: pid $p used $(( ($(cpu_of "$p") - ${before[$p]}) * 1000 / ticks )) ms of CPU in the window" >&2
done
sleep 2 # JFR writes its file when the recording ends
wait "$bench" || true
trap - EXIT
python3 scripts/profile_report.py "$OUT" "$serve" "$worker"
