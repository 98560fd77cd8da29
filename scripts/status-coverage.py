#!/usr/bin/env python3
"""Which documented statuses the test suite never produced.

    status-coverage.py OPENAPI_JSON STATUS_LOG

STATUS_LOG holds the server's "handled route=... status=..." lines that the test harness
appends when AIDEN_STATUS_LOG is set (tests/src/lib.rs). Prints, per operation, the statuses
its document lists that no test saw; docs/api.md says why each one is left.
"""
import json
import re
import sys

LINE = re.compile(r"method=(\S+?)[ }].*handled route=(\S+) status=(\d+)")


def main(doc_path, log_path):
    doc = json.load(open(doc_path))
    seen = set()
    with open(log_path, errors="replace") as log:
        for line in log:
            m = LINE.search(line)
            if m:
                seen.add((m.group(1).lower(), m.group(2), m.group(3)))
    documented = missing = 0
    for path, ops in sorted(doc["paths"].items()):
        for method, op in sorted(ops.items()):
            statuses = sorted(op.get("responses", {}))
            documented += len(statuses)
            left = [s for s in statuses if (method, path, s) not in seen]
            missing += len(left)
            if left:
                print(f"  {method.upper():6} {path:45} never answered: {', '.join(left)}")
    print(f"status coverage: {documented - missing} of {documented} documented statuses produced by the suite")


if __name__ == "__main__":
    main(*sys.argv[1:3])
