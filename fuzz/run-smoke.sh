#!/usr/bin/env bash
# Builds every fuzz target and runs each for a few seconds: a smoke test, not a
# fuzzing campaign. Exits non-zero when a build fails or a target crashes (the
# crashing input is left in fuzz/artifacts/<target>/).
#
#   fuzz/run-smoke.sh [SECONDS]      # per target, default 10
#
# cargo fuzz passes nightly-only flags (-Zsanitizer=address); RUSTC_BOOTSTRAP=1
# lets the stable toolchain accept them, so no nightly toolchain is needed.
set -euo pipefail

seconds="${1:-10}"
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "run-smoke: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

cargo fuzz build
for target in $(cargo fuzz list); do
    echo "run-smoke: $target for ${seconds}s" >&2
    corpus=("corpus/$target")
    mkdir -p "corpus/$target"
    if [[ -d "seeds/$target" ]]; then
        corpus+=("seeds/$target")
    fi
    options=(-max_total_time="$seconds" -timeout=20 -print_final_stats=1)
    if [[ "$target" == cli_input_parsing ]]; then
        options+=(-dict=cli.dict)
    fi
    cargo fuzz run "$target" "${corpus[@]}" -- "${options[@]}"
done
echo "run-smoke: every target ran ${seconds}s without a crash" >&2
