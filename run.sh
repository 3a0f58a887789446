#!/usr/bin/env bash
# The main job of authtime, from a fresh machine: builds the release binary and
# runs the NTP server with its embedded defaults (plain NTP on port 123 of every
# address, rate limiting on, no keys) until SIGTERM or Ctrl-C.
#
#   ./run.sh                                   # embedded defaults (port 123: root or CAP_NET_BIND_SERVICE)
#   ./run.sh --config examples/authtime.toml   # loopback, high port, symmetric keys, metrics
#   ./run.sh --listen 127.0.0.1:11123          # any `authtime serve` option
set -euo pipefail
cd "$(dirname "$0")"
# libssl-dev and pkg-config: the lab (part of the binary) links libcrypto for its OpenSSL peer.
scripts/ensure-packages.sh libssl-dev pkg-config
cargo build --release --locked -p authtime
exec target/release/authtime serve "$@"
