#!/usr/bin/env bash
# The daemon stays lean: `authtimed` links no OpenSSL, no plotting, no lab and
# no signature schemes it does not serve, and its normal dependency tree
# (`cargo tree -e normal`) holds fewer than 130 crates. Checked on that tree
# and on the release binary (`ldd`: no libssl or libcrypto at run time). Its
# TLS (NTS-KE, rediss) is rustls on AWS-LC, which aws-lc-sys compiles and
# links statically: no shared crypto library either.
# Called by test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

forbidden='^(openssl|openssl-sys|plotters|image|authtime-lab|authtime-sign|authtime-tesla-dtls|ml-dsa|slh-dsa|lms-signature|rcgen) '
tree="$(cargo tree -e normal -p authtimed --locked --prefix none)"
if grep -E "$forbidden" <<<"$tree" | sort -u | grep .; then
    echo "check-daemon-deps: authtimed depends on the crates above" >&2
    exit 1
fi
# Distinct name and version, the crate itself included (issue 29: 107 before
# the redis store and the JSON log format, 151 with them, 128 since; issue 31:
# 130 with authtime-frame and authtime-xdp, the AF_XDP path's own crates,
# which depend on libc only).
count="$(sed 's/ (\*)//; s/ (proc-macro)//' <<<"$tree" | awk '{print $1, $2}' | sort -u | wc -l)"
max=131
if ((count > max)); then
    echo "check-daemon-deps: authtimed has $count crates in its normal dependency tree, more than $max" >&2
    # The usual way back: the idna crate's Unicode back end (ICU4X, 21 crates),
    # which redis -> url pulls and the daemon never calls; authtime-keys pins
    # the stub back end idna_adapter 1.0.0.
    grep -E '^(idna_adapter|icu_[a-z_]+) ' <<<"$tree" | sort -u >&2 || true
    exit 1
fi
echo "check-daemon-deps: authtimed has $count crates (name and version, at most $max) in its normal dependency tree, none of them forbidden" >&2

cargo build --release --locked -p authtimed
binary="${CARGO_TARGET_DIR:-target}/release/authtimed"
if ldd "$binary" | grep -E 'libssl|libcrypto'; then
    echo "check-daemon-deps: $binary links the libraries above" >&2
    exit 1
fi
echo "check-daemon-deps: $binary ($(du -h "$binary" | cut -f1)) links no libssl or libcrypto" >&2
