# Sourced by the scripts that use the tests' graph (test.sh, soak.sh): an API and workers that
# scripts/run.sh started share the graph with them (ArcadeDB's Bolt plugin serves one database
# to every client): their engine would re-dispatch the tests' runs and their episode pool bind
# the tests' content. Stop them; scripts/run.sh starts them again. $1 names the caller.
for pidfile in .stack/serve.pid .stack/worker-*.pid; do
  [ -f "$pidfile" ] || continue
  if kill "$(cat "$pidfile")" 2>/dev/null; then
    echo "$1: stopped $(basename "$pidfile" .pid) (started by scripts/run.sh; run it again afterwards)"
  fi
  rm -f "$pidfile"
done
