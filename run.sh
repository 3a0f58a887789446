#!/usr/bin/env bash
# The main job of authtime, from a fresh machine: builds the server daemon,
# `authtimed`, and runs it with its embedded defaults (plain NTP on port 123 of
# every address, rate limiting on, no keys, the clock's state from chronyd or
# the kernel) until SIGTERM or Ctrl-C.
#
#   ./run.sh                                   # embedded defaults (port 123: root or CAP_NET_BIND_SERVICE)
#   ./run.sh --config examples/authtime.toml   # loopback, high port, symmetric keys, metrics
#   ./run.sh --listen 127.0.0.1:11123          # any `authtimed` option (authtimed --help)
set -euo pipefail
cd "$(dirname "$0")"
# The daemon links no OpenSSL: nothing to install but the Rust toolchain.
cargo build --release --locked -p authtimed
# Started as root, authtimed switches to the user `authtime` once its sockets
# are bound (the Debian package creates it). Where there is no such user and
# none is named, run as `nobody`, which every Debian system has.
args=("$@")
if [ "$(id -u)" = 0 ] && ! id authtime >/dev/null 2>&1 \
    && [[ " $* " != *" --user "* && " $* " != *" --allow-root "* ]]; then
    echo "run.sh: no user \`authtime\` here: authtimed will run as \`nobody\` after binding" >&2
    args+=(--user nobody)
fi
exec target/release/authtimed "${args[@]}"
