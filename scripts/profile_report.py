#!/usr/bin/env python3
"""The top functions of each part of a `scripts/bench-profile.sh` recording.

Neo4j: Java Flight Recorder's execution samples, by the method on top of the stack (self
time) and by the Neo4j component that method belongs to (its package, three levels deep).
aiden serve and the worker pool: perf's self time per symbol. Usage:
    profile_report.py DIR SERVE_PID WORKER_PID
"""
import collections
import json
import subprocess
import sys


def jfr_report(path, top=20):
    out = subprocess.run(
        ["jfr", "print", "--json", "--events", "jdk.ExecutionSample", path],
        check=True, capture_output=True, text=True).stdout
    events = json.loads(out)["recording"]["events"]
    methods, packages = collections.Counter(), collections.Counter()
    for e in events:
        frames = e["values"]["stackTrace"]["frames"]
        if not frames:
            continue
        m = frames[0]["method"]
        cls = m["type"]["name"].replace("/", ".")
        methods[f"{cls}.{m['name']}"] += 1
        # The component: the first Neo4j frame from the top (its package, 3 levels deep).
        names = [f["method"]["type"]["name"].replace("/", ".") for f in frames]
        comp = next((n for n in names if n.startswith("org.neo4j")), cls)
        packages[".".join(comp.split(".")[:4])] += 1
    total = sum(methods.values()) or 1
    print(f"== Neo4j (JFR execution samples of Java threads: {total}) ==")
    print("-- by component (the first org.neo4j package from the top) --")
    for name, n in packages.most_common(top):
        print(f"{100 * n / total:5.1f}%  {name}")
    print("-- by method (self) --")
    for name, n in methods.most_common(top):
        print(f"{100 * n / total:5.1f}%  {name}")


def perf_report(path, pid, label, top=25):
    out = subprocess.run(
        ["perf", "report", "-i", path, "--no-children", "--sort", "symbol", "-g", "none",
         "--stdio", "--pid", pid, "--percent-limit", "0.7"],
        capture_output=True, text=True).stdout
    lines = [l for l in out.splitlines() if l.strip() and not l.startswith("#")]
    print(f"== {label} (perf, self time, pid {pid}) ==")
    for l in lines[:top]:
        print(" ".join(l.split()[:2] + [l.split("]", 1)[-1].strip()[:110]]))


def main():
    d, serve, worker = sys.argv[1:4]
    jfr_report(f"{d}/neo4j.jfr")
    perf_report(f"{d}/perf.data", serve, "aiden serve: API + engine")
    perf_report(f"{d}/perf.data", worker, "aiden worker --type rest_api")


if __name__ == "__main__":
    main()
