#!/usr/bin/env bash
# Keeps the deployment files honest without a Docker engine (none runs on CI or dev machines).
#
#   scripts/check-compose.sh               check compose.yaml, Dockerfile and .dockerignore
#   scripts/check-compose.sh FILE          check another compose file (the Dockerfile checks still
#                                          read the repo's own files)
#   scripts/check-compose.sh --self-test   also prove the check can fail: break copies of
#                                          compose.yaml in known ways, expect each to be rejected
#
# `docker-compose config` parses, validates against its schema and interpolates without an
# engine. Every implementation found is used: Debian's docker-compose (installed from apt when
# missing; 1.29 on bookworm, 2.x on newer releases), the `docker compose` plugin if present, and a
# standalone Compose v2 binary named by $AIDEN_COMPOSE_V2. Then the interpolated model is
# asserted on: the services, each worker's `--type`, the Neo4j floor (5.26), loopback-only ports,
# start-up order, healthchecks, restart policies and the shared AIDEN_* settings.
# Exit status 0 only if every check passed; every failure is listed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF="$ROOT/scripts/check-compose.sh"
die() { echo "check-compose: FAIL: $*" >&2; exit 1; }

SELF_TEST=0
FILE="$ROOT/compose.yaml"
for arg in "$@"; do
  case "$arg" in
    --self-test) SELF_TEST=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) die "unknown option $arg" ;;
    *) FILE=$(cd "$(dirname "$arg")" && pwd)/$(basename "$arg") ;;
  esac
done
[ -f "$FILE" ] || die "no compose file at $FILE"

# ---- tools ---------------------------------------------------------------------------------
apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    die "$* missing and cannot be installed here (needs root and apt-get): install it"
  fi
  echo "check-compose: installing $* from apt" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "$@" >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "$@" >/dev/null 2>&1; } \
    || die "apt-get install $* failed"
}
command -v docker-compose >/dev/null || apt_install docker-compose
command -v docker-compose >/dev/null || die "docker-compose is still not on PATH after installing it"
command -v python3 >/dev/null || apt_install python3
python3 -c 'import yaml' 2>/dev/null || apt_install python3-yaml

# Each implementation as a command prefix, with a label.
IMPLS=("docker-compose")
LABELS=("docker-compose $(docker-compose version --short 2>/dev/null || echo '?')")
if docker compose version >/dev/null 2>&1; then
  IMPLS+=("docker compose"); LABELS+=("docker compose $(docker compose version --short 2>/dev/null)")
fi
if [ -n "${AIDEN_COMPOSE_V2:-}" ]; then
  [ -x "$AIDEN_COMPOSE_V2" ] || die "AIDEN_COMPOSE_V2=$AIDEN_COMPOSE_V2 is not executable"
  IMPLS+=("$AIDEN_COMPOSE_V2"); LABELS+=("$AIDEN_COMPOSE_V2 $("$AIDEN_COMPOSE_V2" version --short 2>/dev/null)")
fi

# ---- self-test: the check must reject broken files -----------------------------------------
if [ "$SELF_TEST" = 1 ]; then
  "$SELF" "$FILE" || die "the unbroken file does not pass; fix that first"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  caught=0; missed=0
  for mutation in drop-worker wrong-worker-type old-neo4j neo4j-4 public-port version-key \
                  hardcoded-master-key optional-master-key worker-no-replicas api-no-healthcheck \
                  unknown-key graphiti-on-other-graph; do
    python3 - "$FILE" "$tmp/compose.yaml" "$mutation" <<'PY'
import sys, yaml
src, dst, m = sys.argv[1:]
doc = yaml.safe_load(open(src))          # merge keys resolved, so each service stands alone
s = doc["services"]
if m == "drop-worker": del s["worker-mcp-call"]
elif m == "wrong-worker-type": s["worker-llm-call"]["command"][2] = "rest_api"
elif m == "old-neo4j": s["neo4j"]["image"] = "neo4j:5.25"
elif m == "neo4j-4": s["neo4j"]["image"] = "neo4j:4.4"
elif m == "public-port": s["api"]["ports"] = ["8080:8080"]
elif m == "version-key": doc = {"version": "3.9", **doc}
elif m == "hardcoded-master-key": s["worker-rest-api"]["environment"] = dict(s["worker-rest-api"]["environment"], AIDEN_MASTER_KEY="changeme")
elif m == "optional-master-key":
    for svc in s.values():
        if "AIDEN_MASTER_KEY" in (svc.get("environment") or {}): svc["environment"]["AIDEN_MASTER_KEY"] = "${AIDEN_MASTER_KEY}"
elif m == "worker-no-replicas": del s["worker-graph-query"]["deploy"]
elif m == "api-no-healthcheck": del s["api"]["healthcheck"]
elif m == "unknown-key": s["api"]["bogus_key"] = 1
elif m == "graphiti-on-other-graph": s["graphiti"]["environment"]["AIDEN_NEO4J_DATABASE"] = "graphiti"
else: sys.exit("unknown mutation " + m)
yaml.safe_dump(doc, open(dst, "w"), sort_keys=False)
PY
    if out=$("$SELF" "$tmp/compose.yaml" 2>&1); then
      echo "check-compose: self-test: MISSED $mutation (a broken file passed)" >&2; missed=$((missed+1))
    else
      why=$(grep -m1 'FAIL' <<<"$out" | sed 's/^check-compose: FAIL: //' | cut -c1-140)
      echo "check-compose: self-test: caught $mutation: $why"
      caught=$((caught+1))
    fi
  done
  echo "check-compose: self-test: $caught passed, $missed failed"
  [ "$missed" = 0 ] || exit 1
  exit 0
fi

# ---- compose: parse, validate, interpolate -------------------------------------------------
# A clean environment with dummy values for the required variables, and an empty env file so a
# local .env cannot change the outcome.
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
: >"$work/empty.env"
DUMMY=(AIDEN_NEO4J_PASSWORD=check-compose-neo4j-pw
       AIDEN_MASTER_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
       AIDEN_ADMIN_TOKEN=check-compose-admin-token)
run_compose() { # impl, then env assignments, then --
  local impl=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  # shellcheck disable=SC2086  # $impl may be "docker compose"
  env -i PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 "${envs[@]}" \
    $impl --env-file "$work/empty.env" -f "$FILE" "$@"
}

failures=0
fail() { echo "check-compose: FAIL: $*" >&2; failures=$((failures+1)); }

for i in "${!IMPLS[@]}"; do
  impl=${IMPLS[$i]}; label=${LABELS[$i]}
  if ! err=$(run_compose "$impl" "${DUMMY[@]}" -- config -q 2>&1); then
    fail "[$label] config -q rejected $FILE:"; printf '    %s\n' "${err//$'\n'/$'\n'    }" >&2; continue
  fi
  run_compose "$impl" "${DUMMY[@]}" -- config >"$work/config.$i.yaml" 2>"$work/err" \
    || { fail "[$label] config failed: $(cat "$work/err")"; continue; }
  # Each required variable, when missing, must stop compose with a message naming it.
  for var in AIDEN_NEO4J_PASSWORD AIDEN_MASTER_KEY AIDEN_ADMIN_TOKEN; do
    rest=(); for kv in "${DUMMY[@]}"; do [ "${kv%%=*}" = "$var" ] || rest+=("$kv"); done
    if run_compose "$impl" "${rest[@]}" -- config -q >"$work/out" 2>&1; then
      fail "[$label] compose accepts a missing $var (use \${$var:?message})"
    elif ! grep -q "$var" "$work/out"; then
      fail "[$label] missing $var fails, but the message does not name it: $(head -c 300 "$work/out")"
    fi
  done
  echo "check-compose: [$label] parses and validates $FILE"
done

# ---- assertions on the interpolated model (and on the raw file, Dockerfile, .dockerignore) --
# The operation types, as the binary lists them (the OperationType enum): one worker service each.
AIDEN_OPERATION_TYPES=$(cd "$ROOT" && cargo run --quiet --bin aiden -- operation-types)
export AIDEN_OPERATION_TYPES
python3 - "$ROOT" "$FILE" "$work" "${#IMPLS[@]}" "${LABELS[@]}" "${DUMMY[@]}" <<'PY' || failures=$((failures+$?))
import os, re, sys, yaml

root, file, work, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
labels = sys.argv[5:5 + n]
dummy = dict(kv.split("=", 1) for kv in sys.argv[5 + n:])
failed = 0
def fail(msg):
    global failed
    failed += 1
    print("check-compose: FAIL: " + msg, file=sys.stderr)

# One worker service per operation type (`aiden operation-types`, the OperationType enum) and
# the Graphiti ingestion pool.
WORKERS = {f"worker-{t.replace('_', '-')}": t
           for t in os.environ["AIDEN_OPERATION_TYPES"].split() + ["episode"]}
AIDEN = ["migrate", "api", *WORKERS]
LONG_RUNNING = ["neo4j", "rabbitmq", "api", "graphiti", *WORKERS]
SHARED_ENV = {
    "AIDEN_NEO4J_URI": "bolt://neo4j:7687", "AIDEN_NEO4J_USER": "neo4j",
    "AIDEN_NEO4J_PASSWORD": dummy["AIDEN_NEO4J_PASSWORD"], "AIDEN_NEO4J_DATABASE": "neo4j",
    "AIDEN_AMQP_URI": "amqp://guest:guest@rabbitmq:5672/%2f",
    "AIDEN_MASTER_KEY": dummy["AIDEN_MASTER_KEY"], "AIDEN_ADMIN_TOKEN": dummy["AIDEN_ADMIN_TOKEN"],
    "AIDEN_LOG_FORMAT": "json",
}

def cmd(svc):
    c = svc.get("command") or []
    return c if isinstance(c, str) else " ".join(str(x) for x in c)

def env(svc):
    e = svc.get("environment") or {}
    if isinstance(e, list):
        e = dict(x.split("=", 1) if "=" in x else (x, None) for x in e)
    return e

def host_ips(svc):
    """(host_ip, published) for every published port, short or long syntax."""
    out = []
    for p in svc.get("ports") or []:
        if isinstance(p, dict):
            if p.get("published") not in (None, ""):
                out.append((p.get("host_ip") or "0.0.0.0", str(p["published"])))
        else:
            parts = str(p).split("/")[0].rsplit(":", 2)
            if len(parts) == 3:
                out.append((parts[0] or "0.0.0.0", parts[1]))
            elif len(parts) == 2:
                out.append(("0.0.0.0", parts[0]))
            # a bare container port publishes a random port on all interfaces
            else:
                out.append(("0.0.0.0", "random"))
    return out

def condition(svc, dep):
    d = svc.get("depends_on") or {}
    if isinstance(d, list):
        return "service_started" if dep in d else None
    return (d.get(dep) or {}).get("condition") if dep in d else None

# Raw file: Compose spec, no obsolete top-level `version:`.
raw = yaml.safe_load(open(file))
if isinstance(raw, dict) and "version" in raw:
    fail(f"{os.path.basename(file)} has a top-level `version:` key; the Compose spec has none")
# A second API instance behind the `ha` profile: same image and command, its own
# loopback port, and no fixed AIDEN_INSTANCE_ID (two instances sharing one would share the lease).
api2 = ((raw or {}).get("services") or {}).get("api-2")
if not api2:
    fail("service `api-2` (the second API instance, profile ha) is missing")
else:
    if api2.get("profiles") != ["ha"]:
        fail(f"api-2: profiles must be [ha], is {api2.get('profiles')!r}")
    if not any("${AIDEN_HTTP_PORT_2" in str(p) for p in api2.get("ports") or []):
        fail("api-2: must publish its own port (AIDEN_HTTP_PORT_2)")
    if "AIDEN_INSTANCE_ID" in str(api2.get("environment") or ""):
        fail("api-2: must not fix AIDEN_INSTANCE_ID (its host name keeps it apart from api)")

for i, label in enumerate(labels):
    cfg = yaml.safe_load(open(os.path.join(work, f"config.{i}.yaml"))) if os.path.exists(os.path.join(work, f"config.{i}.yaml")) else None
    if not cfg:
        continue  # the compose run already failed and said why
    def bad(msg): fail(f"[{label}] {msg}")
    s = cfg.get("services") or {}
    for name in ["neo4j", "rabbitmq", "migrate", "api", "graphiti", *WORKERS]:
        if name not in s:
            bad(f"service `{name}` is missing")
    # Graphiti shares the API's Neo4j (the Episodic nodes bound to are the ones it writes).
    g = s.get("graphiti") or {}
    ge = env(g)
    api_env = env(s.get("api") or {})
    if g and any(ge.get(k) != api_env.get(k) or not ge.get(k) for k in ("AIDEN_NEO4J_URI", "AIDEN_NEO4J_DATABASE")):
        bad("graphiti: must run on the API's Neo4j and database (AIDEN_NEO4J_URI, AIDEN_NEO4J_DATABASE as the api's)")
    if g and condition(g, "neo4j") != "service_healthy":
        bad("graphiti: depends_on neo4j must have condition service_healthy")
    if g and not (g.get("healthcheck") or {}).get("test"):
        bad("graphiti: no healthcheck")
    if "worker-episode" in s and env(s["worker-episode"]).get("AIDEN_GRAPHITI_URL") != "http://graphiti:8091":
        bad("worker-episode: AIDEN_GRAPHITI_URL must name the graphiti service")
    # Workers: one per operation type, each running its own type, scalable per type.
    for name, typ in WORKERS.items():
        if name not in s: continue
        c = cmd(s[name])
        if not re.search(rf"(^|\s)worker --type {typ}(\s|$)", c):
            bad(f"{name}: command `{c}` does not contain `worker --type {typ}`")
        if not re.search(r"--concurrency \d+", c):
            bad(f"{name}: command `{c}` has no `--concurrency N`")
        rep = (s[name].get("deploy") or {}).get("replicas")
        if not isinstance(rep, int) or rep < 0:
            bad(f"{name}: deploy.replicas must be set (an integer, from AIDEN_WORKERS_*); got {rep!r}")
        if s[name].get("container_name") or s[name].get("ports"):
            bad(f"{name}: container_name or published ports would break --scale")
    extra = [n for n in s if n.startswith("worker-") and n not in WORKERS]
    if extra:
        bad(f"unexpected worker services {extra}: the operation types are {sorted(WORKERS.values())}")
    # Neo4j: 5.x, at least 5.26 (Graphiti's floor).
    img = (s.get("neo4j") or {}).get("image", "")
    m = re.fullmatch(r"neo4j:5\.(\d+)(\.\d+)*(-[a-z0-9-]+)?", img)
    if not m:
        bad(f"neo4j image `{img}` is not a neo4j:5.x tag")
    elif int(m.group(1)) < 26:
        bad(f"neo4j image `{img}` is older than 5.26")
    if "NEO4J_AUTH" not in env(s.get("neo4j", {})) or not str(env(s["neo4j"])["NEO4J_AUTH"]).endswith("/" + dummy["AIDEN_NEO4J_PASSWORD"]):
        bad("neo4j: NEO4J_AUTH must be neo4j/${AIDEN_NEO4J_PASSWORD}")
    if not str((s.get("rabbitmq") or {}).get("image", "")).startswith("rabbitmq:"):
        bad("rabbitmq: image is not rabbitmq:*")
    # Published ports only on loopback.
    for name, svc in s.items():
        for ip, port in host_ips(svc):
            if ip not in ("127.0.0.1", "::1", "localhost"):
                bad(f"{name}: port {port} is published on {ip}, not 127.0.0.1")
    # Healthchecks and start-up order.
    for name in ["neo4j", "rabbitmq", "api"]:
        hc = (s.get(name) or {}).get("healthcheck") or {}
        if not hc.get("test") or hc.get("disable"):
            bad(f"{name}: no healthcheck")
    for name, dep, want in [("migrate", "neo4j", "service_healthy"),
                            ("api", "migrate", "service_completed_successfully"),
                            ("api", "rabbitmq", "service_healthy"),
                            *[(w, "api", "service_healthy") for w in WORKERS]]:
        if name in s and condition(s[name], dep) != want:
            bad(f"{name}: depends_on {dep} must have condition {want}, has {condition(s[name], dep)}")
    if "migrate" in s and "migrate" not in cmd(s["migrate"]).split():
        bad(f"migrate: command `{cmd(s['migrate'])}` does not run `migrate`")
    if "api" in s and "serve" not in cmd(s["api"]).split():
        bad(f"api: command `{cmd(s['api'])}` does not run `serve`")
    for name in LONG_RUNNING:
        if name in s and s[name].get("restart") != "unless-stopped":
            bad(f"{name}: restart is {s[name].get('restart')!r}, want unless-stopped")
    # The aiden services: one image, built once, the shared settings.
    images = {s[n].get("image") for n in AIDEN if n in s}
    if len(images) != 1 or None in images:
        bad(f"aiden services should share one image, have {images}")
    builders = [n for n in AIDEN if n in s and s[n].get("build")]
    if len(builders) != 1:
        bad(f"exactly one aiden service should build the image, found {builders}")
    for name in AIDEN:
        if name not in s: continue
        e = env(s[name])
        for k, v in SHARED_ENV.items():
            if str(e.get(k)) != v:
                bad(f"{name}: {k}={e.get(k)!r}, want {v!r}")
    if "api" in s and env(s["api"]).get("AIDEN_HTTP_ADDR") != "0.0.0.0:8080":
        bad("api: AIDEN_HTTP_ADDR must be 0.0.0.0:8080 inside the container")

# Dockerfile and .dockerignore (static: no engine to build with).
def read(p):
    try: return open(os.path.join(root, p)).read()
    except OSError: fail(f"{p} is missing"); return ""
df = read("Dockerfile")
if df:
    for pat, why in [
        (r"(?m)^FROM rust:1-bookworm AS \w+", "a rust:1-bookworm builder stage"),
        (r"cargo build --release -p aiden --locked", "`cargo build --release -p aiden --locked`"),
        (r"(?m)^FROM debian:bookworm-slim\s*$", "a debian:bookworm-slim runtime stage"),
        (r"ca-certificates", "ca-certificates in the runtime"),
        (r"\bcurl\b", "curl in the runtime (the api healthcheck uses it)"),
        (r"(?m)^COPY --from=\w+ /usr/local/bin/aiden /usr/local/bin/aiden", "the binary copied to /usr/local/bin/aiden"),
        (r"(?m)^COPY cypher/? /opt/aiden/cypher/?", "cypher/ copied to /opt/aiden/cypher"),
        (r"(?m)^COPY seed/? /opt/aiden/seed/?", "seed/ copied to /opt/aiden/seed"),
        (r'(?m)^ENTRYPOINT \["aiden"\]', 'ENTRYPOINT ["aiden"]'),
    ]:
        if not re.search(pat, df):
            fail(f"Dockerfile lacks {why}")
    users = re.findall(r"(?m)^USER\s+(\S+)", df)
    if not users or users[-1].split(":")[0] in ("root", "0"):
        fail("Dockerfile: the runtime stage must end as a non-root USER")
for d in ["cypher", "seed"]:
    if not os.path.isdir(os.path.join(root, d)):
        fail(f"{d}/ is missing: the Dockerfile copies it")
di = read(".dockerignore")
if di:
    entries = {l.strip().strip("/") for l in di.splitlines() if l.strip() and not l.startswith("#")}
    for e in ["target", ".stack", ".git"]:
        if e not in entries:
            fail(f".dockerignore does not exclude {e}")
sys.exit(min(failed, 100))
PY

if [ "$failures" -gt 0 ]; then
  echo "check-compose: $failures check(s) failed" >&2
  exit 1
fi
echo "check-compose: ok: $(basename "$FILE") (services, worker types, neo4j >= 5.26, loopback ports, order, env), Dockerfile, .dockerignore"
