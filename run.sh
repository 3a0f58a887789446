#!/usr/bin/env bash
# The main job of authtime, from a fresh machine: builds the release binary and
# runs it. For now that is the MAC library's command line: the list of
# algorithms and one tag.
set -euo pipefail
cd "$(dirname "$0")"
# libssl-dev and pkg-config: the lab links libcrypto for its OpenSSL peer.
scripts/ensure-packages.sh openssl libssl-dev pkg-config fonts-dejavu-core
cargo build --release --locked -p authtime
bin=target/release/authtime
"$bin" mac list
printf 'an NTP header of 48 bytes.......................' |
  "$bin" mac tag --alg aes128-cmac --key 2b7e151628aed2a6abf7158809cf4f3c
