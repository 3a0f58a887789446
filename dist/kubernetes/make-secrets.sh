#!/usr/bin/env bash
# Makes the fleet's Secrets (docs/container.md) into one manifest, with the
# `authtime` tool: the KEK that seals the NTS master keys in Redis (`authtime
# nts kek`), the NTS-KE certificate and key for the names clients use
# (`authtime nts cert`: a private CA; bring your ACME certificate instead for
# a public service), the Roughtime long-term key (`authtime roughtime
# keygen`) and two Redis passwords (the default user's, for replication and
# the sentinels, and the ACL user authtime's).
#
#   dist/kubernetes/make-secrets.sh --out secrets.yaml --name time.example.net [--name NAME]... [--ip IP]...
#
# Prints the CA file clients trust (beside --out, PREFIX nts-ca.pem) and the
# Roughtime public key. The manifest holds private keys: keep it as you keep
# them (and remove it once applied). AUTHTIME names the tool (default: the
# one in PATH).
set -euo pipefail
authtime="${AUTHTIME:-authtime}"
out=""
cert_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --out) out="$2"; shift 2 ;;
    --name | --ip) cert_args+=("$1" "$2"); shift 2 ;;
    *) echo "make-secrets: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || { echo "usage: make-secrets.sh --out FILE --name DNS [--name DNS]... [--ip IP]..." >&2; exit 2; }
[ ${#cert_args[@]} -gt 0 ] || cert_args=(--name authtimed)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
umask 077
"$authtime" nts kek --out "$work/kek" >&2
"$authtime" nts cert --out-dir "$work" "${cert_args[@]}" >&2
"$authtime" roughtime keygen --out "$work/roughtime.key" >"$work/roughtime.pub"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/redis-password"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/redis-authtime-password"
b64() { base64 -w 0 <"$work/$1"; }
{
    echo "# The authtime fleet's Secrets, made by dist/kubernetes/make-secrets.sh. Private keys: keep them so."
    echo "apiVersion: v1"
    echo "kind: Secret"
    echo "metadata:"
    echo "  name: authtime-fleet"
    echo "  labels: {app.kubernetes.io/part-of: authtime-fleet}"
    echo "type: Opaque"
    echo "data:"
    for f in kek nts-chain.pem nts-key.pem nts-ca.pem roughtime.key redis-authtime-password; do
        echo "  $f: $(b64 "$f")"
    done
    echo "---"
    echo "apiVersion: v1"
    echo "kind: Secret"
    echo "metadata:"
    echo "  name: authtime-fleet-redis"
    echo "  labels: {app.kubernetes.io/part-of: authtime-fleet}"
    echo "type: Opaque"
    echo "data:"
    for f in redis-password redis-authtime-password; do
        echo "  $f: $(b64 "$f")"
    done
} >"$out"
ca="$(dirname "$out")/nts-ca.pem"
cp "$work/nts-ca.pem" "$ca"
chmod 644 "$ca"
echo "make-secrets: wrote $out; clients trust $ca" >&2
cat "$work/roughtime.pub"
