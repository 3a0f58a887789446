#!/usr/bin/env bash
# The daemon stays lean: `authtimed` links no OpenSSL, no plotting, no lab and
# no signature schemes it does not serve. Checked on the dependency tree
# (`cargo tree -e normal`) and on the release binary (`ldd`: no libssl or
# libcrypto at run time). Its TLS (NTS-KE, rediss) is rustls on AWS-LC, which
# aws-lc-sys compiles and links statically: no shared crypto library either.
# Called by test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

forbidden='^(openssl|openssl-sys|plotters|image|authtime-lab|authtime-sign|authtime-tesla-dtls|ml-dsa|slh-dsa|lms-signature|rcgen) '
tree="$(cargo tree -e normal -p authtimed --locked --prefix none)"
if grep -E "$forbidden" <<<"$tree" | sort -u | grep .; then
    echo "check-daemon-deps: authtimed depends on the crates above" >&2
    exit 1
fi
count="$(sed 's/ (\*)//; s/ (proc-macro)//' <<<"$tree" | awk '{print $1, $2}' | sort -u | wc -l)"
echo "check-daemon-deps: authtimed has $count crates (name and version) in its normal dependency tree, none of them forbidden" >&2

cargo build --release --locked -p authtimed
if ldd target/release/authtimed | grep -E 'libssl|libcrypto'; then
    echo "check-daemon-deps: target/release/authtimed links the libraries above" >&2
    exit 1
fi
echo "check-daemon-deps: target/release/authtimed ($(du -h target/release/authtimed | cut -f1)) links no libssl or libcrypto" >&2
