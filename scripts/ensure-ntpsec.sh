#!/usr/bin/env bash
# Unpacks NTPsec 1.2.2 (Debian's `ntpsec` package) once per machine for the
# interop tests (crates/authtime/tests/nts_ntpsec.rs), outside the work tree:
#   ${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}/ntpsec-1.2.2/usr/sbin/ntpd
#
# The package is downloaded and unpacked, never installed: it conflicts with
# chrony (both provide time-daemon), which other tests use, and installing it
# would start a service that disciplines the host clock. The tests run the
# unpacked ntpd inside a user and network namespace of their own, where it can
# bind ports 123 and 4460 but has no power over the host clock (docs/interop.md).
# Prints the path of ntpd.
set -euo pipefail

version=1.2.2
dir="${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}/ntpsec-$version"
ntpd="$dir/usr/sbin/ntpd"

if [ ! -x "$ntpd" ]; then
    # The libraries ntpd links (the package's Depends that are libraries), and
    # the tools the tests make the namespace with (unshare, nsenter, setpriv:
    # util-linux; ip: iproute2).
    "$(dirname "$0")/ensure-packages.sh" libssl3 libbsd0 libcap2 util-linux iproute2
    mkdir -p "$(dirname "$dir")"
    # One unpack at a time (test binaries may call this concurrently).
    exec 9>"$dir.lock"
    flock 9
fi
if [ ! -x "$ntpd" ]; then
    work="$(mktemp -d "$dir.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    echo "ensure-ntpsec: downloading and unpacking ntpsec $version into $dir" >&2
    # apt-get download writes into the current directory (as root it warns
    # that the _apt user cannot write there, which is harmless).
    (cd "$work" && apt-get download -q ntpsec 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
    deb=("$work"/ntpsec_*.deb)
    [ -f "${deb[0]}" ] || { echo "ensure-ntpsec: apt-get download ntpsec failed" >&2; exit 1; }
    got="$(dpkg-deb -f "${deb[0]}" Version)"
    case "$got" in
        "$version"+*) ;;
        *) echo "ensure-ntpsec: apt offers ntpsec $got, the tests are written for $version" >&2; exit 1 ;;
    esac
    dpkg-deb -x "${deb[0]}" "$work/root"
    "$work/root/usr/sbin/ntpd" --version >/dev/null
    # Moved into place only once it runs, so a half-done unpack is never used.
    rm -rf "$dir"
    mv "$work/root" "$dir"
fi
echo "$ntpd"
