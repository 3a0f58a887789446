#!/usr/bin/env bash
# The soak and fault harness (issue 29, docs/soak.md). Not part of ./test.sh:
# it is long.
#
#   scripts/soak.sh             the CI short mode: the ignored test
#                               lab_soak_smoke (about 2.5 minutes), which
#                               asserts a PASS verdict
#   scripts/soak.sh 1h [DIR]    a full run of the given length (90s, 20m, 1h),
#                               report in DIR (default soak-out/); exits 1 on FAIL
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-packages.sh redis-server fonts-dejavu-core
if [ $# -eq 0 ]; then
    cargo build -p authtime --locked
    exec cargo test -p authtime-lab --locked --test lab_soak_smoke -- --ignored --nocapture
fi
out="${2:-soak-out}"
cargo build -p authtime -p authtime-labtool --release --locked
target="${CARGO_TARGET_DIR:-target}/release"
"$target/authtime-lab" run --only soak --duration "$1" --out "$out" | tee "$out.txt"
grep -q "Verdict: PASS" "$out.txt"
