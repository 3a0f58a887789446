#!/usr/bin/env bash
# roughenough, the Roughtime peer for future interop tests (issue 21), built
# once per machine outside the work tree (see docs/roughtime-peers.md):
#
#   2.2.x          RFC 10049, wire version 1 (and 0x8000000c from its client)
#                  crates roughenough-server and roughenough-client
#   1.3.0-draft14  draft 14, wire version 0x8000000c; crate roughenough
#
# Cache: ${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}
#   roughenough-2.2/bin/{roughenough_server,roughenough_client}
#       cargo install roughenough-server --version '~2.2' --locked
#       cargo install roughenough-client --version '~2.2' --locked
#   roughenough-1.3.0-draft14/bin/{roughenough-server,roughenough-client,roughenough-kms}
#       cargo install roughenough --version '=1.3.0-draft14' --locked
# Note the binary names: 2.2 uses underscores, 1.3 hyphens.
# Nothing is rebuilt when the cache holds builds of those versions. A lock
# serializes concurrent runs (test.sh and `cargo test` on the same machine).
#
# Prints, on standard output, where things are (progress goes to standard error):
#   roughenough-2.2-bin=DIR
#   roughenough-2.2-server-version=2.2.x
#   roughenough-2.2-client-version=2.2.x
#   roughenough-1.3-bin=DIR
#   roughenough-1.3-version=1.3.0-draft14
set -euo pipefail
cache="${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}"
dest2="$cache/roughenough-2.2"
dest1="$cache/roughenough-1.3.0-draft14"
mkdir -p "$cache"

exec 9>"$cache/.roughenough.lock"
if ! flock -w 1800 9; then
    echo "ensure-roughenough: another build has held $cache/.roughenough.lock for 30 minutes" >&2
    exit 1
fi

# `roughenough_server --version` prints "roughenough-server 2.2.0" (clap 4);
# the 1.3 client prints "roughenough client 1.3.0-draft14" (clap 2).
version_of() {
    "$1" --version 2>&1 | awk 'NF { print $NF; exit }'
}

# cargo install CRATE VERSION-REQ ROOT: a clean build environment (the
# caller's target directory and flags, for example -D warnings, are for
# authtime, not for roughenough), with the published lock file.
install_crate() {
    if ! command -v cargo >/dev/null; then
        echo "ensure-roughenough: cargo is needed to build roughenough" >&2
        exit 1
    fi
    echo "ensure-roughenough: building $1 $2 into $3 (a few minutes, once per machine)" >&2
    local start
    start=$(date +%s)
    env -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET_DIR -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS \
        cargo install "$1" --version "$2" --locked --force --root "$3" >&2
    echo "ensure-roughenough: built $1 in $(( $(date +%s) - start )) s" >&2
}

server2="$(version_of "$dest2/bin/roughenough_server" || true)"
if [[ -x "$dest2/bin/roughenough_server" && "$server2" == 2.2.* ]]; then
    echo "ensure-roughenough: roughenough_server $server2 already built in $dest2" >&2
else
    install_crate roughenough-server '~2.2' "$dest2"
    server2="$(version_of "$dest2/bin/roughenough_server")"
fi
client2="$(version_of "$dest2/bin/roughenough_client" || true)"
if [[ -x "$dest2/bin/roughenough_client" && "$client2" == 2.2.* ]]; then
    echo "ensure-roughenough: roughenough_client $client2 already built in $dest2" >&2
else
    install_crate roughenough-client '~2.2' "$dest2"
    client2="$(version_of "$dest2/bin/roughenough_client")"
fi
if [[ "$server2" != 2.2.* || "$client2" != 2.2.* ]]; then
    echo "ensure-roughenough: the 2.2 build says server '$server2', client '$client2', not 2.2.x" >&2
    exit 1
fi

# The 1.3 server has no --version; its client does, and both come from one crate.
version1="$(version_of "$dest1/bin/roughenough-client" || true)"
if [[ -x "$dest1/bin/roughenough-server" && -x "$dest1/bin/roughenough-client" \
      && "$version1" == 1.3.0-draft14 ]]; then
    echo "ensure-roughenough: roughenough $version1 already built in $dest1" >&2
else
    install_crate roughenough '=1.3.0-draft14' "$dest1"
    version1="$(version_of "$dest1/bin/roughenough-client")"
    if [[ "$version1" != 1.3.0-draft14 ]]; then
        echo "ensure-roughenough: the 1.3 build says it is version '$version1', not 1.3.0-draft14" >&2
        exit 1
    fi
fi

echo "roughenough-2.2-bin=$dest2/bin"
echo "roughenough-2.2-server-version=$server2"
echo "roughenough-2.2-client-version=$client2"
echo "roughenough-1.3-bin=$dest1/bin"
echo "roughenough-1.3-version=$version1"
