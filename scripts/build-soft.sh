#!/usr/bin/env bash
# Builds `authtime-lab-soft`: authtime-lab with every hardware path of the
# RustCrypto crates compiled out (AES, GHASH/POLYVAL, SHA-1, SHA-256, Poly1305),
# placed beside target/release/authtime-lab. `authtime-lab run` runs its
# `bench mac`, with AUTHTIME_ISA=portable turning our own kernels off, for the
# "without AES-NI/SHA-NI" column of the mac section (the draft's second
# column). Those crates only choose their software backends at compile time,
# hence a second build.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS='--cfg aes_backend="soft" --cfg polyval_backend="soft" --cfg sha1_backend="soft" --cfg sha2_backend="soft" --cfg poly1305_backend="soft"'
cargo build --release --locked -p authtime-labtool --bin authtime-lab --target-dir target/soft
mkdir -p target/release
cp target/soft/release/authtime-lab target/release/authtime-lab-soft
echo "built target/release/authtime-lab-soft" >&2
