#!/usr/bin/env bash
# Supply-chain check of the workspace, offline: cargo-deny with deny.toml
# (licences, duplicate versions, sources, advisories) against the RustSec
# advisory database snapshot in ../shared/advisory-db. Called by test.sh.
#
#   scripts/check-supply-chain.sh              check the workspace
#   scripts/check-supply-chain.sh --self-test  show that the check fails on the
#       crafted fixtures in scripts/supply-chain-fixtures/ (a GPL, an EUPL and
#       an unlicensed dependency; a Cargo.lock pinning a vulnerable crate; an
#       ignored advisory that reaches the daemon; a wildcard requirement)
#
# cargo-deny is built once per machine outside the work tree, like the interop
# peers (scripts/ensure-ntpd-rs.sh):
#   ${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}/cargo-deny-0.20.2/bin/cargo-deny
#
# The advisory database: ${AUTHTIME_ADVISORY_DB:-<repo>/../shared/advisory-db},
# a directory with the advisory files under crates/ (a data-only snapshot or a
# git clone of the RustSec advisory-db). It is only read: cargo-deny wants the
# layout of its own fetched clone (<db-path>/advisory-db-<hash of the URL>/ with
# a .git/FETCH_HEAD whose time is the fetch time), so each run lays that out in
# a scratch directory, with crates/ a symbolic link to the snapshot and the
# FETCH_HEAD time set to the snapshot's date, and removes it at the end.
#
# Beyond cargo-deny, this script fails when an advisory ignored in deny.toml is
# about a crate in authtimed's normal dependency tree (an advisory that affects
# the daemon must fail CI), and when a crates.io dependency has a wildcard
# version requirement (deny.toml leaves cargo-deny's wildcard lint off because
# it also flags our path dependencies).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

deny_version=0.20.2
cache="${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}"
dest="$cache/cargo-deny-$deny_version"
deny="$dest/bin/cargo-deny"
# The directory cargo-deny 0.20.2 derives from its default database URL
# (https://github.com/RustSec/advisory-db): its name and a hash of the URL.
db_dir_name=advisory-db-3157b0e258782691
daemon=authtimed
fixtures="$repo/scripts/supply-chain-fixtures"

say() { echo "check-supply-chain: $*" >&2; }
die() { say "$*"; exit 1; }

# --- cargo-deny, built once per machine -------------------------------------
ensure_cargo_deny() {
    mkdir -p "$cache"
    exec 8>"$cache/.cargo-deny-$deny_version.lock"
    if ! flock -w 1800 8; then
        die "another build has held $cache/.cargo-deny-$deny_version.lock for 30 minutes"
    fi
    local have
    have="$("$deny" --version 2>/dev/null | awk '{ print $2 }' || true)"
    if [[ "$have" != "$deny_version" ]]; then
        command -v cargo >/dev/null || die "cargo is needed to build cargo-deny"
        say "building cargo-deny $deny_version into $dest (about 5 minutes, once per machine)"
        local start
        start=$(date +%s)
        # A clean build environment: the caller's target directory and flags
        # (for example -D warnings) are for authtime, not for cargo-deny.
        env -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET_DIR -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS \
            cargo install cargo-deny --version "=$deny_version" --locked --force --root "$dest" >&2
        say "built in $(( $(date +%s) - start )) s"
        have="$("$deny" --version 2>/dev/null | awk '{ print $2 }' || true)"
        [[ "$have" == "$deny_version" ]] || die "$deny says it is version '$have', not $deny_version"
    fi
    flock -u 8
}

# --- the advisory database, read-only ----------------------------------------
db_src=""
db_date=""
db_commit=""
scratch=""
cleanup() { if [[ -n "$scratch" ]]; then rm -rf -- "$scratch"; fi; }
trap cleanup EXIT

prepare_db() {
    local wanted="${AUTHTIME_ADVISORY_DB:-$repo/../shared/advisory-db}"
    [[ -d "$wanted/crates" ]] || die "no advisory database at $wanted (expected a crates/ directory of RustSec advisories; README.md, \"Supply chain\", says how to get one; AUTHTIME_ADVISORY_DB names another place)"
    db_src="$(cd "$wanted" && pwd)"
    if [[ -e "$db_src/.git" ]]; then
        db_date="$(git -C "$db_src" log -1 --format=%cs)"
        db_commit="$(git -C "$db_src" log -1 --format=%H)"
    elif [[ -f "$db_src/SNAPSHOT" ]]; then
        db_date="$(grep -oE '\(20[0-9]{2}-[0-9]{2}-[0-9]{2}\)' "$db_src/SNAPSHOT" | head -1 | tr -d '()' || true)"
        db_commit="$(grep -oE '\b[0-9a-f]{40}\b' "$db_src/SNAPSHOT" | head -1 || true)"
    fi
    [[ -n "$db_date" ]] || die "cannot tell the date of the advisory database in $db_src (neither a git clone nor a SNAPSHOT file naming a date)"

    scratch="$(mktemp -d "${TMPDIR:-/tmp}/authtime-advisory-db.XXXXXX")"
    local layout="$scratch/$db_dir_name"
    mkdir -p "$layout/.git"
    ln -s "$db_src/crates" "$layout/crates"
    touch -d "$db_date" "$layout/.git/FETCH_HEAD"
    export AUTHTIME_ADVISORY_DB_ROOT="$scratch"

    local age=$(( ( $(date +%s) - $(date -d "$db_date" +%s) ) / 86400 ))
    local count
    count="$(find "$db_src/crates" -name '*.md' | wc -l)"
    say "advisory database: $db_src, ${db_commit:+commit ${db_commit:0:12}, }$db_date ($age days old), $count advisories"
    if (( age > 90 )); then
        say "warning: the advisory database is $age days old; refresh it where there is network (README.md, \"Supply chain\")"
    fi
}

# --- our own checks ----------------------------------------------------------

# Fails when an ignored advisory is about a crate in PACKAGE's normal
# dependency tree (any target). Args: MANIFEST PACKAGE ID...
ignored_outside() {
    local manifest="$1" package="$2"
    shift 2
    local tree id file crate bad=0
    tree="$(cargo tree --offline --locked --manifest-path "$manifest" -p "$package" -e normal \
        --target all --prefix none | sed 's/ (\*)//; s/ (proc-macro)//' | awk '{ print $1 }' | sort -u)" \
        || { say "error: cargo tree failed for $package ($manifest)"; return 1; }
    for id in "$@"; do
        file="$(find "$db_src/crates" -name "$id.md" | head -1)"
        [[ -n "$file" ]] || { say "ignored advisory $id is not in the database"; bad=1; continue; }
        crate="$(basename "$(dirname "$file")")"
        if grep -qxF "$crate" <<<"$tree"; then
            say "error: advisory $id ($crate) is ignored in deny.toml but $crate is in $package's dependency tree:"
            cargo tree --offline --locked --manifest-path "$manifest" -p "$package" -e normal \
                --target all -i "$crate" >&2 || true
            bad=1
        fi
    done
    return "$bad"
}

# Fails on a crates.io dependency whose version requirement is "*". Arg: MANIFEST
registry_wildcards() {
    cargo metadata --offline --no-deps --format-version 1 --manifest-path "$1" | python3 -c '
import json, sys
bad = [f"{p['"'"'name'"'"']} -> {d['"'"'name'"'"']} = \"*\""
       for p in json.load(sys.stdin)["packages"] for d in p["dependencies"]
       if d.get("source") and d["req"].strip() == "*"]
for b in bad:
    print("check-supply-chain: error: wildcard requirement on a registry crate:", b, file=sys.stderr)
sys.exit(1 if bad else 0)'
}

# The ignored advisory ids of deny.toml, one per line.
ignored_ids() {
    python3 -c 'import sys, tomllib
for e in tomllib.load(open(sys.argv[1], "rb"))["advisories"].get("ignore", []):
    print(e["id"] if isinstance(e, dict) else e)' "$1"
}

summary() {
    python3 - "$repo/deny.toml" "$repo/Cargo.lock" "$db_src" <<'EOF'
import collections, os, re, sys, tomllib
deny = tomllib.load(open(sys.argv[1], "rb"))
lock = tomllib.load(open(sys.argv[2], "rb"))
db = os.path.join(sys.argv[3], "crates")

def say(s):
    print("check-supply-chain: " + s, file=sys.stderr)

ignored = deny["advisories"].get("ignore", [])
say(f"{len(ignored)} advisory(ies) ignored in deny.toml:")
for e in ignored:
    crate, kind = "?", "?"
    for d in os.listdir(db):
        p = os.path.join(db, d, e["id"] + ".md")
        if os.path.exists(p):
            crate = d
            m = re.search(r'^informational\s*=\s*"([^"]+)"', open(p).read(), re.M)
            kind = m.group(1) if m else "vulnerability"
    say(f"  {e['id']} ({crate}, {kind}): {e.get('reason', 'no reason given')}")

versions = collections.defaultdict(list)
for p in lock["package"]:
    if "source" in p:
        versions[p["name"]].append(p["version"])
dups = {n: v for n, v in sorted(versions.items()) if len(v) > 1}
skips = [s["crate"].split(":")[0].split("@")[0] for s in deny["bans"].get("skip", [])]
say(f"{len(dups)} crate(s) with more than one version in Cargo.lock "
    f"({len([n for n in dups if n in skips])} justified in deny.toml):")
for n, v in dups.items():
    say(f"  {n} {' and '.join(v)}" + ("" if n in skips else "  (NOT justified in deny.toml)"))
EOF
}

check_workspace() {
    local start failed=0
    start=$(date +%s)
    say "cargo deny --offline check (licenses, bans, sources, advisories) with deny.toml"
    if ! "$deny" --offline --locked --manifest-path "$repo/Cargo.toml" --config "$repo/deny.toml" \
        check --show-stats licenses bans sources advisories; then
        say "error: cargo-deny rejected the dependency graph (see above)"
        failed=1
    fi
    mapfile -t ids < <(ignored_ids "$repo/deny.toml")
    if ! ignored_outside "$repo/Cargo.toml" "$daemon" "${ids[@]}"; then
        failed=1
    fi
    if ! registry_wildcards "$repo/Cargo.toml"; then
        failed=1
    fi
    summary
    if (( failed )); then
        die "FAILED ($(( $(date +%s) - start )) s)"
    fi
    say "ok: licences, duplicates, sources and advisories ($(( $(date +%s) - start )) s)"
}

# --- the self-test: the check must fail on the crafted fixtures ---------------

# Runs cargo-deny with the project's deny.toml on a fixture, JSON diagnostics
# to FILE. The lints that only say a deny.toml entry matched nothing in the
# small fixture are allowed. Prints cargo-deny's exit code.
deny_fixture() {
    local manifest="$1" out="$2" rc=0
    "$deny" --offline --locked --format json --manifest-path "$manifest" --config "$repo/deny.toml" \
        check -A unmatched-skip -A advisory-not-detected -A license-exception-not-encountered \
        -A license-not-encountered licenses bans sources advisories 2>"$out" >/dev/null || rc=$?
    echo "$rc"
}

# The error diagnostics of a JSON run, one per line: CODE CRATE MESSAGE
errors_of() {
    python3 -c 'import json, sys
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    f = d.get("fields", {})
    if d.get("type") == "diagnostic" and f.get("severity") == "error":
        krate = (f.get("graphs") or [{}])[0].get("Krate") or {}
        name = " ".join([krate.get("name", "?"), krate.get("version", "")]).strip()
        adv = (f.get("advisory") or {}).get("id", "")
        span = ((f.get("labels") or [{}])[0]).get("span", "")
        print(f.get("code"), name, adv or span, "|", f.get("message"))' "$1"
}

self_test() {
    local start t rc errs n_ok=0 n_failed=0
    start=$(date +%s)
    t="$scratch/fixtures"
    mkdir -p "$t"
    cp -R "$fixtures/." "$t/"

    expect() { # WHAT yes|no
        if [[ "$2" == yes ]]; then
            say "self-test: ok: $1"
            n_ok=$((n_ok + 1))
        else
            say "self-test: FAILED: $1"
            n_failed=$((n_failed + 1))
        fi
    }
    has() { grep -qE "$1" <<<"$errs" && echo yes || echo no; }

    # 1. Licences: GPL-3.0, EUPL-1.2 and no licence at all are rejected.
    rc="$(deny_fixture "$t/licence-gpl/Cargo.toml" "$t/licence.json")"
    errs="$(errors_of "$t/licence.json")"
    say "self-test: licence-gpl: cargo-deny exit code $rc, errors:"
    sed 's/^/check-supply-chain:   /' <<<"$errs" >&2
    expect "licence-gpl fails" "$([[ "$rc" != 0 ]] && echo yes || echo no)"
    expect "GPL-3.0-only crate rejected" "$(has '^rejected gpl-dep 0\.0\.0 GPL-3\.0-only')"
    expect "EUPL-1.2 crate rejected" "$(has '^rejected eupl-dep 0\.0\.0 EUPL-1\.2')"
    expect "crate without licence rejected" "$(has '^unlicensed unlicensed-dep 0\.0\.0')"
    expect "only licence errors" "$(grep -vqE '^(rejected|unlicensed) ' <<<"$errs" && echo no || echo yes)"

    # 2. Advisories: a Cargo.lock pinning crossbeam-epoch 0.9.18 (RUSTSEC-2026-0204).
    # Its crates come from the registry cache, or from crates.io on a fresh machine.
    cargo fetch --locked --manifest-path "$t/advisory-vuln/Cargo.toml" --offline 2>/dev/null \
        || cargo fetch --locked --manifest-path "$t/advisory-vuln/Cargo.toml"
    rc="$(deny_fixture "$t/advisory-vuln/Cargo.toml" "$t/advisory.json")"
    errs="$(errors_of "$t/advisory.json")"
    say "self-test: advisory-vuln: cargo-deny exit code $rc, errors:"
    sed 's/^/check-supply-chain:   /' <<<"$errs" >&2
    expect "advisory-vuln fails" "$([[ "$rc" != 0 ]] && echo yes || echo no)"
    expect "vulnerability RUSTSEC-2026-0204 in crossbeam-epoch 0.9.18" \
        "$(has '^vulnerability crossbeam-epoch 0\.9\.18 RUSTSEC-2026-0204 ')"
    expect "only that error" "$([[ "$(wc -l <<<"$errs")" == 1 ]] && echo yes || echo no)"

    # 3. Ignoring an advisory of a crate the checked package depends on fails.
    if ignored_outside "$t/advisory-vuln/Cargo.toml" fixture-advisory RUSTSEC-2026-0204 2>"$t/ignored.txt"; then
        expect "ignored advisory reaching the package is refused" no
    else
        sed 's/^check-supply-chain: //; s/^/check-supply-chain:   /' "$t/ignored.txt" | head -3 >&2
        expect "ignored advisory reaching the package is refused" \
            "$(grep -q 'RUSTSEC-2026-0204 (crossbeam-epoch) is ignored' "$t/ignored.txt" && echo yes || echo no)"
    fi
    # ... and the real one (ttf-parser) passes for authtimed: checked by the
    # workspace run.

    # 4. A wildcard requirement on a crates.io crate fails.
    if registry_wildcards "$t/wildcard-dep/Cargo.toml" 2>"$t/wildcard.txt"; then
        expect "wildcard requirement refused" no
    else
        sed 's/^check-supply-chain: //; s/^/check-supply-chain:   /' "$t/wildcard.txt" >&2
        expect "wildcard requirement refused" \
            "$(grep -q 'fixture-wildcard -> crossbeam-utils = "\*"' "$t/wildcard.txt" && echo yes || echo no)"
    fi

    say "self-test: $n_ok passed, $n_failed failed ($(( $(date +%s) - start )) s)"
    (( n_failed == 0 )) || exit 1
}

case "${1:-}" in
    "") mode=check ;;
    --self-test) mode=self-test ;;
    *) die "usage: $0 [--self-test]" ;;
esac

command -v python3 >/dev/null || die "python3 is needed"
ensure_cargo_deny
prepare_db
if [[ "$mode" == self-test ]]; then
    self_test
else
    check_workspace
fi
