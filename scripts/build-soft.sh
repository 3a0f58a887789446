#!/usr/bin/env bash
# Builds `authtime-soft`: authtime with every hardware path of the RustCrypto
# crates compiled out (AES, GHASH/POLYVAL, SHA-1, SHA-256, Poly1305), placed
# beside target/release/authtime. `authtime lab` runs it, with AUTHTIME_ISA=portable
# turning our own kernels off, for the "without AES-NI/SHA-NI" column of the
# mac section (the draft's second column). Those crates only choose their
# software backends at compile time, hence a second build.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS='--cfg aes_backend="soft" --cfg polyval_backend="soft" --cfg sha1_backend="soft" --cfg sha2_backend="soft" --cfg poly1305_backend="soft"'
cargo build --release --locked -p authtime --target-dir target/soft
mkdir -p target/release
cp target/soft/release/authtime target/release/authtime-soft
echo "built target/release/authtime-soft" >&2
