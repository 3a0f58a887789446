#!/usr/bin/env bash
# The monitoring files of dist/ (docs/monitoring.md): `promtool check rules`
# (syntax, PromQL, templates) and `promtool test rules` (each alert firing at
# its threshold and silent short of it) on dist/prometheus/, and the Grafana
# dashboard parsed as JSON with a PromQL expression in every target. That
# every rule evaluates and every panel query returns data on a live daemon is
# the cargo test crates/authtime/tests/monitoring.rs. Needs the Debian package
# prometheus (promtool); about 2 s.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-packages.sh prometheus python3
promtool check rules dist/prometheus/authtime-alerts.yml
(cd dist/prometheus && promtool test rules authtime-alerts.test.yml)
python3 - dist/grafana/authtime.json <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
def panels(items):
    for p in items:
        yield p
        yield from panels(p.get("panels", []))
count = 0
for p in panels(dashboard["panels"]):
    for t in p.get("targets", []):
        if not t.get("expr", "").strip():
            sys.exit(f"panel {p.get('title')!r}: a target without a PromQL expression")
        count += 1
    if p.get("type") != "row" and not p.get("targets"):
        sys.exit(f"panel {p.get('title')!r}: no query")
print(f"check-monitoring: {sys.argv[1]}: {count} queries", file=sys.stderr)
PY
