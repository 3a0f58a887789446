#!/usr/bin/env bash
# Source-based line and region coverage of the authtime crates reached by one
# fuzz target's corpus: `cargo fuzz coverage` (a -Cinstrument-coverage build
# of the target, every input run once), its profile merged with LLVM's
# llvm-profdata and reported by llvm-cov. Files of dependencies (~/.cargo),
# of the standard library and of fuzz/ itself are left out, so the TOTAL line
# covers the sources of crates/authtime-* linked into the target.
#
#   FUZZ_CI_DIR=/tmp/fuzz-ci scripts/fuzz-coverage.sh TARGET LABEL DIR...
#
# The rustc of the toolchain ships no llvm-profdata (no llvm-tools component),
# so LLVM_BIN must name a directory holding llvm-profdata and llvm-cov of the
# LLVM major version of `rustc -vV` (default /usr/lib/llvm-22/bin, Debian's
# llvm-22 package). Prints "TARGET LABEL lines=COVERED/TOTAL (P%)
# regions=COVERED/TOTAL (P%)" and leaves the full report in
# $COVERAGE_OUT/TARGET.LABEL.txt.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz_dir="${FUZZ_CI_DIR:-$root/target/fuzz-ci}/fuzz"
llvm_bin="${LLVM_BIN:-/usr/lib/llvm-22/bin}"
out="${COVERAGE_OUT:-$root/target/fuzz-coverage}"
# cargo fuzz coverage's own default, kept apart from the fuzzing build.
cov_target="${COVERAGE_TARGET_DIR:-$root/fuzz/target/x86_64-unknown-linux-gnu/coverage}"
export RUSTC_BOOTSTRAP=1

target="$1"
label="$2"
shift 2
mkdir -p "$out"
cd "$root/fuzz"
rm -rf "$fuzz_dir/coverage/$target"
cargo fuzz coverage --fuzz-dir "$fuzz_dir" --target-dir "$cov_target" \
    --sanitizer none --llvm-path "$llvm_bin" \
    "$target" "$@" -- -max_len=1048576 -rss_limit_mb=2048 -timeout=30 \
    >"$out/$target.$label.log" 2>&1
bin="$cov_target/x86_64-unknown-linux-gnu/release/$target"
cp "$fuzz_dir/coverage/$target/coverage.profdata" "$out/$target.$label.profdata"
"$llvm_bin/llvm-cov" report "$bin" -instr-profile="$out/$target.$label.profdata" \
    --ignore-filename-regex='(\.cargo|rustc|/fuzz/)' >"$out/$target.$label.txt"
# TOTAL  regions missed cover  functions missed executed  lines missed cover  branches ...
awk -v t="$target" -v l="$label" '$1 == "TOTAL" {
    printf "%s %s lines=%d/%d (%s) regions=%d/%d (%s)\n", t, l, $8 - $9, $8, $10, $2 - $3, $2, $4
}' "$out/$target.$label.txt"
