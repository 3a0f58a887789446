#!/usr/bin/env bash
# The container image (issue 30, docs/container.md): builds it
# (scripts/build-image.sh), runs it as an operator would (read-only root
# filesystem, every capability dropped but CAP_NET_BIND_SERVICE, no new
# privileges, its configuration and keys mounted read-only, the state
# directory on a tmpfs) with its ports published on loopback only, and
# checks from the host that:
#   - it runs as the user authtime (not root), with CapEff = CAP_NET_BIND_SERVICE
#     and port 123 bound, and cannot write its root filesystem;
#   - `authtime query` gets plain NTP on port 123 and NTS (NTS-KE, then NTP);
#   - roughenough 2.2's client verifies its Roughtime answer;
#   - its logs on standard output are JSON; its health check passes, and
#     fails once the server stops answering;
#   - configured by the environment alone (AUTHTIMED_LISTEN, AUTHTIMED_METRICS), it serves too.
# Then the fleet (scripts/check-fleet.sh) with the Kubernetes manifests.
#
# Prints "SKIPPED: <reason>" and exits 0 only where podman cannot run
# containers here (not root, no podman, or a trivial container fails).
# Every container, volume and image tag it makes goes, on failure too (the
# built archive stays cached, see scripts/build-image.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "check-container: $*" >&2; }
fail() {
    say "FAILED: $*"
    exit 1
}
if [ "$(id -u)" != 0 ]; then
    echo "SKIPPED: check-container: podman here runs as root only (rootless podman needs subuids this CI does not set up)"
    exit 0
fi
scripts/ensure-packages.sh podman runc mmdebstrap uidmap python3 >&2

scratch="$(mktemp -d)"
# shellcheck source=scripts/podman-env.sh
. scripts/podman-env.sh
podman_conf "$scratch"
tag="i30-check-$$"
# The image tags a run loads and that were not there before it go at the end.
images_before="$(images_of_ours)"
containers=()
cleanup() {
    for c in "${containers[@]}"; do podman rm -f -v -t 2 "$c" >/dev/null 2>&1 || true; done
    comm -13 <(echo "$images_before") <(images_of_ours) | xargs -r podman rmi >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT

probe_err="$(podman info 2>&1 >/dev/null)" || {
    echo "SKIPPED: check-container: podman does not work here: ${probe_err//$'\n'/ }"
    exit 0
}
image="$(scripts/build-image.sh authtimed)"
probe_err="$(podman run --rm --network none --entrypoint true "$image" 2>&1)" || {
    echo "SKIPPED: check-container: podman cannot run a container here: ${probe_err//$'\n'/ }"
    exit 0
}
say "image $image: $(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.1f MB", $1/1e6}'), $(podman run --rm --network none --entrypoint cat "$image" /usr/share/authtime-image/packages | wc -l) Debian packages"

authtime="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/authtime"
[ -x "$authtime" ] || fail "$authtime missing (scripts/build-deb.sh builds it)"
rough_bin="$(scripts/ensure-roughenough.sh | sed -n 's/^roughenough-2.2-bin=//p')"
free_port() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, getattr(socket, sys.argv[1])); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"; }

# The configuration, NTS certificate and Roughtime key, as an operator
# mounts them: owned by the image's user, keys mode 0600.
etc="$scratch/etc"
mkdir -p "$etc"
"$authtime" nts cert --out-dir "$etc" --name localhost --ip 127.0.0.1 >/dev/null
rough_hex="$("$authtime" roughtime keygen --out "$etc/roughtime.key" | sed -n 's/^public key (hex): //p')"
[ -n "$rough_hex" ] || fail "no public key from authtime roughtime keygen"
ntp_port="$(free_port SOCK_DGRAM)"
cat >"$etc/authtimed.toml" <<EOF
# The check's server: plain NTP on 123 (bound without root, by the one
# capability) and on the published port NTS-KE announces, NTS-KE, Roughtime,
# metrics; a declared lab clock (the host's own may be unsynchronized).
[ntp]
listen = ["0.0.0.0:123", "0.0.0.0:$ntp_port"]
workers = 1
[nts-ke]
listen = ["0.0.0.0:4460"]
certificate-chain = "/etc/authtime/nts-chain.pem"
private-key = "/etc/authtime/nts-key.pem"
ntp-port = $ntp_port
workers = 1
[keystore]
kind = "embedded"
path = "/var/lib/authtime/nts-master-keys"
[roughtime]
listen = ["0.0.0.0:2002"]
long-term-key = "/etc/authtime/roughtime.key"
[metrics]
listen = "127.0.0.1:9123"
[clock]
source = "static"
stratum = 2
reference-id = "192.0.2.1"
EOF
uid_gid="$(podman image inspect --format '{{.Config.User}}' "$image")"
chown -R "$uid_gid" "$etc"
# Checked by the image's own tool, as its user, with the files mounted.
podman run --rm --network none --read-only -v "$etc:/etc/authtime:ro" --entrypoint authtime "$image" \
    config check /etc/authtime/authtimed.toml >&2 || fail "the check's configuration is invalid"

ke_port="$(free_port SOCK_STREAM)"
port123="$(free_port SOCK_DGRAM)"
rough_port="$(free_port SOCK_DGRAM)"
name="$tag-authtimed"
containers+=("$name")
podman run -d --name "$name" \
    --read-only --cap-drop all --cap-add net_bind_service --security-opt no-new-privileges \
    --tmpfs /var/lib/authtime:rw,U,mode=0700 \
    -v "$etc:/etc/authtime:ro" \
    --health-interval disable \
    -p "127.0.0.1:$port123:123/udp" -p "127.0.0.1:$ntp_port:$ntp_port/udp" \
    -p "127.0.0.1:$ke_port:4460/tcp" -p "127.0.0.1:$rough_port:2002/udp" \
    "$image" >/dev/null
for _ in $(seq 100); do
    podman logs "$name" 2>&1 | grep -q '^Roughtime on udp and tcp ' && break
    [ "$(podman inspect --format '{{.State.Running}}' "$name")" = true ] || break
    sleep 0.1
done
podman logs "$name" >"$scratch/log" 2>&1
grep -q '^Roughtime on udp and tcp ' "$scratch/log" || { cat "$scratch/log" >&2; fail "authtimed did not start"; }

# Non-root, one capability, read-only root.
status="$(podman exec "$name" cat /proc/1/status)"
uid="$(awk '/^Uid:/ {print $2}' <<<"$status")"
cap_eff="$(awk '/^CapEff:/ {print $2}' <<<"$status")"
[ "$uid" != 0 ] || fail "authtimed runs as root"
[ "$(podman exec "$name" id -un)" = authtime ] || fail "the container's user is $(podman exec "$name" id -un)"
[ "$cap_eff" = 0000000000000400 ] || fail "CapEff $cap_eff, not CAP_NET_BIND_SERVICE alone"
[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$name")" = true ] || fail "root filesystem not read-only"
# Even root in the container cannot write it (the user authtime could not anyway).
if podman exec --user root "$name" touch /etc/passwd /usr/sbin/new-file 2>"$scratch/touch"; then fail "the root filesystem is writable"; fi
grep -q 'Read-only file system' "$scratch/touch" || { cat "$scratch/touch" >&2; fail "writing the root filesystem failed otherwise"; }
say "authtimed runs as $(podman exec "$name" id -un) (uid $uid), CapEff $cap_eff (CAP_NET_BIND_SERVICE), root filesystem read-only: $(head -n 1 "$scratch/touch")"

# Plain NTP on 123, NTS, Roughtime.
"$authtime" query "127.0.0.1:$port123" --json >"$scratch/plain.json" || { cat "$scratch/plain.json" >&2; fail "no plain NTP answer on port 123"; }
"$authtime" query --nts "127.0.0.1:$ke_port" --ca "$etc/nts-ca.pem" --json >"$scratch/nts.json" \
    || { cat "$scratch/nts.json" "$scratch/log" >&2; fail "no NTS answer"; }
python3 - "$scratch/plain.json" "$scratch/nts.json" <<'EOF' >&2 || fail "unexpected query results"
import json, sys
plain, nts = (json.load(open(p)) for p in sys.argv[1:])
assert plain["replies"][0]["ok"] is True, plain
reply = nts["replies"][0]
assert reply["ok"] is True and reply["auth"] == "nts", nts
print(f"check-container: plain NTP on 123: stratum {plain['replies'][0]['stratum']}; "
      f"NTS: offset {reply['offset']:+.6f} s, auth {reply['auth']}, {nts['nts']['ke_exchanges']} NTS-KE")
EOF
"$rough_bin/roughenough_client" -P 1 -t 5 -f %s -k "$rough_hex" 127.0.0.1 "$rough_port" >"$scratch/rough.raw" 2>&1 \
    || { cat "$scratch/rough.raw" >&2; fail "roughenough's client got no verified answer"; }
sed 's/\x1b\[[0-9;]*m//g' "$scratch/rough.raw" >"$scratch/rough.out"
# It prints "... roughenough_client: EPOCH (+/-RADIUSs)" once the answer verified.
rough_time="$(sed -n 's/.*roughenough_client[^:]*: *\([0-9]*\) .*/\1/p' "$scratch/rough.out" | head -n 1)"
[ -n "$rough_time" ] && [ $((rough_time - $(date +%s))) -le 5 ] && [ $(($(date +%s) - rough_time)) -le 5 ] \
    || { cat "$scratch/rough.out" >&2; fail "roughenough's client printed no time near the host's"; }
say "roughenough 2.2's client verified the Roughtime answer: $(sed -n 's/.*roughenough_client[^:]*: *//p' "$scratch/rough.out" | head -n 1)"

# JSON logs on standard output, the health check both ways.
podman logs "$name" 2>/dev/null >"$scratch/stdout"
python3 - "$scratch/stdout" <<'EOF' || fail "no JSON log lines on standard output"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert lines and all("level" in l and "timestamp" in l for l in lines), lines
EOF
health="$(podman healthcheck run "$name" 2>/dev/null)" || fail "health check failed: $health"
say "logs: $(grep -c '^{' "$scratch/stdout") JSON lines on standard output; health check: ${health:-healthy}"

# Configured by the environment alone (the image's packaged file and these variables).
env_port="$(free_port SOCK_DGRAM)"
metrics_port="$(free_port SOCK_STREAM)"
env_name="$tag-env"
containers+=("$env_name")
podman run -d --name "$env_name" --read-only --cap-drop all --cap-add net_bind_service \
    --security-opt no-new-privileges --health-interval disable \
    -e AUTHTIMED_LISTEN=0.0.0.0:123 -e AUTHTIMED_METRICS=0.0.0.0:9123 \
    -p "127.0.0.1:$env_port:123/udp" -p "127.0.0.1:$metrics_port:9123/tcp" "$image" >/dev/null
for _ in $(seq 100); do
    podman logs "$env_name" 2>&1 | grep -q '^metrics on ' && break
    sleep 0.1
done
"$authtime" query "127.0.0.1:$env_port" --json >"$scratch/env.json" 2>/dev/null || true
# With the packaged configuration it announces the host's clock, which
# may be unsynchronized here: an answer either way.
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["replies"][0]; sys.exit(0 if r.get("ok") or r.get("answered") else 1)' "$scratch/env.json" \
    || { cat "$scratch/env.json" >&2; podman logs "$env_name" >&2; fail "the container configured by the environment did not answer"; }
python3 -c 'import sys,urllib.request; sys.exit(0 if b"authtime_" in urllib.request.urlopen(sys.argv[1], timeout=5).read() else 1)' \
    "http://127.0.0.1:$metrics_port/metrics" || fail "no metrics from AUTHTIMED_METRICS"
say "configured by AUTHTIMED_LISTEN and AUTHTIMED_METRICS alone: answers and serves metrics"

# The health check fails once the server is gone (its clock still reads well).
daemon_pid="$(podman inspect --format '{{.State.Pid}}' "$name")"
kill -STOP "$daemon_pid"
if podman healthcheck run "$name" >/dev/null 2>&1; then kill -CONT "$daemon_pid"; fail "health check passes with the server stopped"; fi
kill -CONT "$daemon_pid"
say "health check fails while the server is stopped (SIGSTOP)"
say "PASS"
