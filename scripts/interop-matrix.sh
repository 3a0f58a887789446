#!/usr/bin/env bash
# The interop matrix from the rows the last `cargo test` run recorded
# (target/tmp/interop-rows): printed, kept in target/interop-matrix.md, and
# with --check compared with README.md (exit 1 on a difference), with
# --write written into it. Called by test.sh with --check.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run -q --locked -p authtime-docgen --bin interop-matrix -- "$@" | tee target/interop-matrix.md
