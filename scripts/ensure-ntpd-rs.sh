#!/usr/bin/env bash
# ntpd-rs 1.9 (crate `ntpd`) for the interop tests, built once per machine
# outside the work tree, and the readonly-clock shim the tests run it under
# (scripts/readonly-clock.c; see docs/interop.md, "ntpd-rs 1.9").
#
# Cache: ${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}
#   ntpd-rs-1.9/bin/{ntp-daemon,ntp-ctl}   cargo install ntpd --version '~1.9' --locked
#   readonly-clock/readonly-clock-HASH.so  the shim, rebuilt when its source changes
# Nothing is rebuilt when the cache holds a 1.9.x build. A lock serializes
# concurrent runs (test.sh and `cargo test` on the same machine).
#
# Prints, on standard output, where things are (progress goes to standard error):
#   ntpd-rs-bin=DIR
#   ntpd-rs-version=1.9.x
#   readonly-clock=FILE.so
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}"
dest="$cache/ntpd-rs-1.9"
mkdir -p "$cache"

exec 9>"$cache/.ntpd-rs-1.9.lock"
if ! flock -w 1800 9; then
    echo "ensure-ntpd-rs: another build has held $cache/.ntpd-rs-1.9.lock for 30 minutes" >&2
    exit 1
fi

installed_version() {
    "$dest/bin/ntp-daemon" --version 2>&1 | awk '{ print $2 }'
}

version="$(installed_version || true)"
if [[ -x "$dest/bin/ntp-daemon" && -x "$dest/bin/ntp-ctl" && "$version" == 1.9.* ]]; then
    echo "ensure-ntpd-rs: ntpd-rs $version already built in $dest" >&2
else
    if ! command -v cargo >/dev/null; then
        echo "ensure-ntpd-rs: cargo is needed to build ntpd-rs" >&2
        exit 1
    fi
    echo "ensure-ntpd-rs: building ntpd-rs 1.9 into $dest (a few minutes, once per machine)" >&2
    start=$(date +%s)
    # A clean build environment: the caller's target directory and flags
    # (for example -D warnings) are for authtime, not for ntpd-rs.
    env -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET_DIR -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS \
        cargo install ntpd --version '~1.9' --locked --force --root "$dest" >&2
    echo "ensure-ntpd-rs: built in $(( $(date +%s) - start )) s" >&2
    version="$(installed_version)"
    if [[ "$version" != 1.9.* ]]; then
        echo "ensure-ntpd-rs: the build says it is version '$version', not 1.9.x" >&2
        exit 1
    fi
fi

src="$here/readonly-clock.c"
hash="$(sha256sum "$src" | cut -c1-16)"
shim="$cache/readonly-clock/readonly-clock-$hash.so"
if [[ ! -f "$shim" ]]; then
    if ! command -v cc >/dev/null; then
        echo "ensure-ntpd-rs: a C compiler (cc) is needed for the readonly-clock shim" >&2
        exit 1
    fi
    mkdir -p "$cache/readonly-clock"
    cc -shared -fPIC -O2 -Wall -Wextra -o "$shim.tmp.$$" "$src"
    mv "$shim.tmp.$$" "$shim"
    echo "ensure-ntpd-rs: built the readonly-clock shim $shim" >&2
fi

echo "ntpd-rs-bin=$dest/bin"
echo "ntpd-rs-version=$version"
echo "readonly-clock=$shim"
