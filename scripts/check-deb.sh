#!/usr/bin/env bash
# The Debian package as an operator meets it (issue 18): builds it
# (scripts/build-deb.sh), runs lintian and compares its tags with the list in
# docs/debian.md (each with its reason; a new tag or a stale entry fails),
# installs it with dpkg -i, starts the installed authtimed with the installed
# configuration on a loopback port, checks it switched to the user authtime
# and answers the installed `authtime query`, then removes the package
# (the configuration stays, nothing else does) and purges it (the
# configuration goes too). Needs root, as dpkg does; CI runs as root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    echo "check-deb: skipped: installing a package needs root" >&2
    exit 0
fi
fail() {
    echo "check-deb: $*" >&2
    exit 1
}
scripts/ensure-packages.sh lintian adduser man-db
deb="$(scripts/build-deb.sh)"
echo "check-deb: built $deb ($(du -k "$deb" | cut -f1) KiB)" >&2
scratch="$(mktemp -d)"
daemon_pid=""
cleanup() {
    if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; fi
    dpkg --purge authtime >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT

# lintian: the tags it prints, against those docs/debian.md explains.
lintian --display-info --tag-display-limit 0 "$deb" >"$scratch/lintian.txt" 2>&1 || true
awk '/^[EWIPX]: authtime[: ]/ { sub(":$", "", $3); print $3 }' "$scratch/lintian.txt" | sort -u >"$scratch/tags"
sed -n 's/^| `\([a-z0-9.+-]*\)` |.*/\1/p' docs/debian.md | sort -u >"$scratch/documented"
if ! diff -u "$scratch/documented" "$scratch/tags" >"$scratch/tags.diff"; then
    cat "$scratch/lintian.txt" >&2
    cat "$scratch/tags.diff" >&2
    fail "lintian's tags (+) differ from those docs/debian.md explains (-)"
fi
echo "check-deb: lintian: $(wc -l <"$scratch/tags") tags, each explained in docs/debian.md" >&2

# A package left by an interrupted earlier run goes first.
dpkg --purge authtime >/dev/null 2>&1 || true
dpkg -i "$deb" >"$scratch/dpkg.txt" 2>&1 || { cat "$scratch/dpkg.txt" >&2; fail "dpkg -i failed"; }
getent passwd authtime >/dev/null || fail "no user authtime after install"
[ "$(stat -c '%U %a' /var/lib/authtime)" = "authtime 700" ] || fail "/var/lib/authtime: $(stat -c '%U %a' /var/lib/authtime)"
for f in /usr/sbin/authtimed /usr/bin/authtime /etc/authtime/authtimed.toml \
    /usr/lib/systemd/system/authtimed.service; do
    [ -e "$f" ] || fail "$f not installed"
done
for page in authtimed authtime authtimed.toml; do
    man -w "$page" >/dev/null 2>&1 || fail "man $page: no page"
done
/usr/bin/authtime config check /etc/authtime/authtimed.toml >/dev/null || fail "installed config invalid"

# The installed daemon with the installed configuration, on a loopback port.
/usr/sbin/authtimed --config /etc/authtime/authtimed.toml --listen 127.0.0.1:0 \
    >"$scratch/out" 2>"$scratch/err" </dev/null &
daemon_pid=$!
for _ in $(seq 200); do
    grep -q '^clock: ' "$scratch/out" && break
    kill -0 "$daemon_pid" 2>/dev/null || { cat "$scratch/out" "$scratch/err" >&2; fail "authtimed exited"; }
    sleep 0.1
done
grep -q '^clock: ' "$scratch/out" || { cat "$scratch/out" "$scratch/err" >&2; fail "authtimed did not start in 20 s"; }
grep -q '^running as user authtime (' "$scratch/out" || { cat "$scratch/out" >&2; fail "no switch to authtime"; }
[ "$(ps -o user= -p "$daemon_pid" | tr -d ' ')" = authtime ] || fail "authtimed runs as $(ps -o user= -p "$daemon_pid")"
port="$(sed -n 's/^listening on udp 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$scratch/out")"
[ -n "$port" ] || fail "no port in: $(cat "$scratch/out")"
/usr/bin/authtime query "127.0.0.1:$port" --json >"$scratch/query.json" 2>"$scratch/query.err" || true
# It answers; whether it calls its clock synchronized depends on this host.
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["replies"]; sys.exit(0 if r and r[0]["answered"] is True else 1)' \
    "$scratch/query.json" || { cat "$scratch/query.json" "$scratch/query.err" >&2; fail "no answer from the installed authtimed"; }
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "authtimed did not stop cleanly on SIGTERM"
daemon_pid=""
echo "check-deb: the installed authtimed ran as authtime and answered: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["replies"][0].get("reason") or "synchronized")' "$scratch/query.json")" >&2

# Remove: the configuration stays; no other file of the package does.
dpkg -L authtime >"$scratch/files"
dpkg -r authtime >/dev/null
[ -f /etc/authtime/authtimed.toml ] || fail "remove deleted the configuration"
while read -r f; do
    if [ "$f" != /etc/authtime/authtimed.toml ] && [ -e "$f" ] && [ ! -d "$f" ]; then
        fail "remove left $f"
    fi
done <"$scratch/files"
if [ -e /var/lib/authtime ]; then fail "remove left the empty /var/lib/authtime"; fi
if [ -e /usr/share/doc/authtime ]; then fail "remove left /usr/share/doc/authtime"; fi
# Purge: the configuration goes too.
dpkg --purge authtime >/dev/null
if [ -e /etc/authtime ]; then fail "purge left /etc/authtime"; fi
echo "check-deb: removed (configuration kept) and purged (nothing left but the user authtime)" >&2
