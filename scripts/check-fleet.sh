#!/usr/bin/env bash
# The fleet's Kubernetes manifests (dist/kubernetes/, docs/container.md),
# played with `podman kube play` on a network of the test's own (issue 30):
# Redis master redis-0, replica redis-1 and three sentinels; three authtimed
# replicas sharing their sealed keys through them; a client container on the
# same network. It checks that:
#   - every replica serves NTS time to a client holding cookies that another
#     replica's NTS-KE issued (each ordered pair, with no new NTS-KE), and
#     Roughtime verified by `authtime roughtime query`;
#   - the ring in Redis is sealed (ATSK) and replicated to redis-1;
#   - a replica killed mid-test (SIGKILL, pod removed) is replaced (its
#     manifest played again, as the Deployment's controller would), while
#     clients holding its cookies keep getting time from the others; the
#     new replica answers cookies issued before it started; no replica ever
#     sent an NTS NAK (their metrics) and no client redid NTS-KE.
# scripts/fleet-manifests.py says what it changes in the manifests for podman.
#
# Prints "SKIPPED: <reason>" and exits 0 only where podman cannot run
# containers; removes every pod, container, volume and network it
# made, on failure too. Needs scripts/build-deb.sh's release build of `authtime`.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "check-fleet: $*" >&2; }
fail() {
    say "FAILED: $*"
    exit 1
}
if [ "$(id -u)" != 0 ]; then
    echo "SKIPPED: check-fleet: podman here runs as root only"
    exit 0
fi
scripts/ensure-packages.sh podman runc mmdebstrap python3 python3-yaml >&2
scratch="$(mktemp -d)"
# shellcheck source=scripts/podman-env.sh
. scripts/podman-env.sh
podman_conf "$scratch"
prefix="at$$-"
net="${prefix}fleet"
pods=()
client="${prefix}client"
# The image tags a run loads and that were not there before it go at the end.
images_before="$(images_of_ours)"
cleanup() {
    podman rm -f -v -t 1 "$client" >/dev/null 2>&1 || true
    for p in "${pods[@]}"; do podman pod rm -f -t 1 "$p" >/dev/null 2>&1 || true; done
    podman volume ls --format '{{.Name}}' | grep "^$prefix" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
    podman network rm -f "$net" >/dev/null 2>&1 || true
    comm -13 <(echo "$images_before") <(images_of_ours) | xargs -r podman rmi >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT
probe_err="$(podman info 2>&1 >/dev/null)" || {
    echo "SKIPPED: check-fleet: podman does not work here: ${probe_err//$'\n'/ }"
    exit 0
}
image="$(scripts/build-image.sh authtimed)"
redis_image="$(scripts/build-image.sh redis)"
probe_err="$(podman run --rm --network none --entrypoint true "$image" 2>&1)" || {
    echo "SKIPPED: check-fleet: podman cannot run a container here: ${probe_err//$'\n'/ }"
    exit 0
}
authtime="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/authtime"
[ -x "$authtime" ] || fail "$authtime missing (scripts/build-deb.sh builds it)"
started=$(date +%s)
say "images: $image, $redis_image"

replicas=(authtimed-a authtimed-b authtimed-c)
# Names on the test's network: each pod's own (PREFIX+NAME-pod-0), which
# the NTS certificate names too, and its Deployment's (the Service's) alias.
host_of() { echo "${prefix}$1-pod-0"; }
cert_names=(--name authtimed)
for r in "${replicas[@]}"; do cert_names+=(--name "$(host_of "$r")"); done
mkdir -p "$scratch/client"
AUTHTIME="$authtime" dist/kubernetes/make-secrets.sh --out "$scratch/client/secrets.yaml" "${cert_names[@]}" \
    >"$scratch/roughtime.pub" 2>"$scratch/make-secrets.err" || { cat "$scratch/make-secrets.err" >&2; fail "make-secrets.sh"; }
rough_key="$(sed -n 's/^public key (base64): //p' "$scratch/roughtime.pub")"
mv "$scratch/client/secrets.yaml" "$scratch/secrets.yaml"

# The manifests as podman plays them: one file per pod, a lab clock.
python3 scripts/fleet-manifests.py --prefix "$prefix" --out "$scratch/pods" --secrets "$scratch/secrets.yaml" \
    --replace 'source = "kernel"' "$(printf 'source = "static"\nstratum = 2\nreference-id = "192.0.2.1"')" \
    dist/kubernetes/config.yaml dist/kubernetes/redis.yaml dist/kubernetes/authtimed.yaml >"$scratch/pods.txt"
grep -c . "$scratch/pods.txt" | grep -qx 8 || { cat "$scratch/pods.txt" >&2; fail "expected 8 pods (2 Redis, 3 sentinels, 3 authtimed)"; }

podman network create "$net" >/dev/null
play() { # FILE ALIAS: plays one pod on the test's network
    podman kube play --network "$net:alias=$2" "$1" >>"$scratch/play.log" 2>&1 \
        || { cat "$scratch/play.log" >&2; fail "podman kube play $1"; }
}
while read -r file service name; do
    pods+=("$(host_of "$name")")
    play "$file" "$service"
done <"$scratch/pods.txt"
say "played $(wc -l <"$scratch/pods.txt") pods from dist/kubernetes in $(($(date +%s) - started)) s: $(cut -d' ' -f3 "$scratch/pods.txt" | tr '\n' ' ')"

# The client: the image's own authtime, on the network, its cookie jars on the host.
chown -R "$(podman image inspect --format '{{.Config.User}}' "$image")" "$scratch/client"
podman run -d --name "$client" --network "$net" --read-only --cap-drop all \
    -v "$scratch/client:/client" --entrypoint sleep "$image" 3600 >/dev/null
at() { podman exec "$client" authtime "$@"; }
nts() { # REPLICA JAR: one NTS query through REPLICA's NTS-KE, cookies in JAR
    at query --nts "$(host_of "$1"):4460" --ca /client/nts-ca.pem --cookie-store "/client/$2" --json --timeout 1 2>/dev/null || true
}
for r in "${replicas[@]}"; do
    for _ in $(seq 60); do
        at query "$(host_of "$r")" --json --timeout 0.5 2>/dev/null | grep -q '"ok": true' && break
        sleep 0.5
    done
    at query "$(host_of "$r")" --json --timeout 1 >/dev/null 2>&1 || {
        podman logs "$(host_of "$r")-authtimed" 2>&1 | tail -20 >&2
        fail "$r does not answer NTP"
    }
done
say "every replica answers NTP, $(($(date +%s) - started)) s after the start"

metrics_of() { # REPLICA: its metrics page, from the host (the pod's address on the test's network)
    local ip
    ip="$(podman exec "$client" getent hosts "$(host_of "$1")" | awk '{print $1; exit}')"
    python3 -c 'import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(f"http://{sys.argv[1]}:9123/metrics", timeout=5).read().decode())' "$ip"
}
# A replica that could not read the store at its start serves with keys of
# its own until its next poll has adopted the fleet's ring (docs/nts.md);
# authtime_nts_keystore_down is 0 once it has. Wait for that on every replica.
for r in "${replicas[@]}"; do
    for _ in $(seq 60); do
        metrics_of "$r" 2>/dev/null | grep -qx 'authtime_nts_keystore_down 0' && break
        sleep 0.5
    done
    metrics_of "$r" | grep -qx 'authtime_nts_keystore_down 0' || fail "$r does not reach the key store"
done
say "every replica reads and writes the key store, $(($(date +%s) - started)) s after the start"

# The ring: sealed, on the master and the replica.
rcli() { # NODE ARGS...: redis-cli as the default user
    local node="$1"
    shift
    podman exec "$(host_of "$node")-redis" sh -c 'REDISCLI_AUTH="$(cat /etc/redis/secrets/redis-password)" exec redis-cli "$@"' sh "$@"
}
check_jar_answer() { # JSON-FILE WHAT: an NTS answer from held cookies, no NTS-KE
    python3 - "$1" "$2" <<'EOF'
import json, sys
out = json.load(open(sys.argv[1]))
reply = out["replies"][0]
ok = reply.get("ok") is True and reply.get("auth") == "nts" and out["nts"]["ke_exchanges"] == 0
if not ok:
    sys.exit(f"check-fleet: FAILED: {sys.argv[2]}: {json.dumps(out)}")
EOF
}

# Cookies from each replica's NTS-KE, used at every other replica.
for ke in "${replicas[@]}"; do
    nts "$ke" "jar-$ke" >"$scratch/ke.json"
    python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); sys.exit(0 if o["replies"][0].get("ok") and o["nts"]["ke_exchanges"]==1 else 1)' \
        "$scratch/ke.json" || { cat "$scratch/ke.json" >&2; fail "no NTS time through $ke's NTS-KE"; }
    for ntp in "${replicas[@]}"; do
        [ "$ke" != "$ntp" ] || continue
        # The session (keys and cookies) moves to the other replica, as a
        # client behind a load balancer or anycast address would.
        python3 - "$scratch/client/jar-$ke" "$scratch/client/jar-$ke-$ntp" "$(host_of "$ntp")" <<'EOF'
import json, os, sys
jar = json.load(open(sys.argv[1]))
jar["ntp_server"] = sys.argv[3]
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, json.dumps(jar).encode())
os.close(fd)
st = os.stat(sys.argv[1])
os.chown(sys.argv[2], st.st_uid, st.st_gid)
EOF
        nts "$ke" "jar-$ke-$ntp" >"$scratch/pair.json"
        check_jar_answer "$scratch/pair.json" "cookies from $ke's NTS-KE at $ntp"
        python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); sys.exit(0 if o["nts"]["ntp_server"].startswith(sys.argv[2]) else 1)' \
            "$scratch/pair.json" "$(host_of "$ntp")" || { cat "$scratch/pair.json" >&2; fail "the answer did not come from $ntp"; }
    done
done
say "NTS: each replica answered cookies issued by each other replica's NTS-KE (6 pairs, no new NTS-KE)"
for r in "${replicas[@]}"; do
    at roughtime query --server "$(host_of "$r"):2002" --public-key "$rough_key" >"$scratch/rough.out" 2>&1 \
        || { cat "$scratch/rough.out" >&2; fail "no verified Roughtime answer from $r"; }
done
say "Roughtime: every replica's answer verified under the fleet's one long-term key"

blob="$(rcli redis-0 --no-raw GET authtime:nts:fleet | head -c 8)"
case "$blob" in '"ATSK'*) ;; *) fail "the ring on redis-0 is not sealed: $blob" ;; esac
[ "$(rcli redis-0 GET authtime:nts:fleet | sha256sum)" = "$(rcli redis-1 GET authtime:nts:fleet | sha256sum)" ] \
    || fail "redis-1 does not hold redis-0's ring"
replicas_seen="$(rcli redis-0 INFO replication | grep -c '^slave[0-9]')"
sentinel_view="$(podman exec "$(host_of redis-sentinel-a)-sentinel" redis-cli -p 26379 SENTINEL master authtime)"
others="$(grep -A1 -x num-other-sentinels <<<"$sentinel_view" | tail -n 1)"
[ "$others" = 2 ] || fail "sentinel a knows $others other sentinels, not 2"
say "Redis: the ring is sealed (ATSK) on redis-0 and replicated to redis-1 ($replicas_seen replica); each sentinel of 3 watches master $(grep -A1 -x ip <<<"$sentinel_view" | tail -n 1), quorum $(grep -A1 -x quorum <<<"$sentinel_view" | tail -n 1)"

# Kill authtimed-b; clients holding its cookies go on at a and c; its
# replacement answers cookies issued before it started.
victim=authtimed-b
podman pod kill "$(host_of "$victim")" >/dev/null
podman pod rm -f "$(host_of "$victim")" >/dev/null
killed=$(date +%s)
during=0
for _ in 1 2 3; do
    for ntp in authtimed-a authtimed-c; do
        nts "$victim" "jar-$victim-$ntp" >"$scratch/during.json"
        check_jar_answer "$scratch/during.json" "cookies from the killed $victim at $ntp"
        during=$((during + 1))
    done
done
play "$(grep " $victim\$" "$scratch/pods.txt" | cut -d' ' -f1)" authtimed
answered=""
for _ in $(seq 120); do
    if at query "$(host_of "$victim")" --json --timeout 0.5 2>/dev/null | grep -q '"ok": true'; then
        answered=yes
        break
    fi
    sleep 0.5
done
replaced=$(($(date +%s) - killed))
if [ -z "$answered" ]; then
    podman logs --timestamps "$(host_of "$victim")-authtimed" 2>&1 | head -n 30 >&2
    podman exec "$client" getent hosts "$(host_of "$victim")" >&2 || true
    fail "the replaced $victim does not answer NTP ${replaced} s after the kill"
fi
for ke in authtimed-a authtimed-c; do
    nts "$ke" "jar-$ke-$victim" >"$scratch/after.json"
    check_jar_answer "$scratch/after.json" "cookies from $ke's NTS-KE at the replaced $victim"
done
nts "$victim" "jar-$victim-fresh" >"$scratch/fresh.json"
grep -q '"auth": "nts"' "$scratch/fresh.json" || { cat "$scratch/fresh.json" >&2; fail "no NTS-KE at the replaced $victim"; }
say "$victim killed: $during NTS queries with its cookies answered by authtimed-a and -c meanwhile; replaced in ${replaced} s, it answered cookies issued by a and c before it started"

# No NAK anywhere: the replicas' own counts.
for r in "${replicas[@]}"; do
    metrics_of "$r" >"$scratch/metrics" || fail "no metrics from $r"
    grep -qx 'authtime_nts_keystore_down 0' "$scratch/metrics" || fail "$r: its key store is down"
    naks="$(awk '/^authtime_nts_naks_total/ {n += $NF} END {print n + 0}' "$scratch/metrics")"
    [ "$naks" = 0 ] || fail "$r sent $naks NTS NAKs"
done
rss="$(podman exec "$(host_of authtimed-a)-authtimed" sh -c 'grep VmRSS /proc/1/status' | awk '{print $2}')"
say "no NTS NAK from any replica (authtime_nts_naks_total 0 on a, c and the new b); authtimed-a resident memory $((rss / 1024)) MiB"
say "PASS in $(($(date +%s) - started)) s"
