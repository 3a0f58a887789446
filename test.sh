#!/usr/bin/env bash
# The whole test suite of authtime, from a fresh machine: installs the real
# components the tests use (OpenSSL, b3sum, ...) when they are missing, then runs
# formatting, lints and every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")"

# Debian packages the tests start or call for real.
# openssl: peer and cross-check; b3sum: BLAKE3 cross-check; libssl-dev and pkg-config:
# the lab links libcrypto for its per-packet OpenSSL peer; fonts-dejavu-core: plot text;
# groff-base, mandoc, zsh, fish: the man pages render and the completions parse;
# gcc: aws-lc-sys compiles AWS-LC (rustls's provider) with the C compiler, no cmake;
# python3: the supply-chain check reads deny.toml, Cargo.lock and cargo-deny's JSON;
# prometheus: promtool checks and unit-tests the alert rules, and the monitoring test
# runs a real Prometheus against a real daemon (docs/monitoring.md);
# podman, runc, mmdebstrap, python3-yaml: the container image and the fleet's
# manifests (scripts/check-container.sh and check-fleet.sh install them too);
# iproute2, libcap2-bin: the AF_XDP tests make namespaces and veth pairs, and
# run each setup step without one capability (capsh).
scripts/ensure-packages.sh openssl b3sum libssl-dev pkg-config fonts-dejavu-core chrony redis-server memcached \
    groff-base mandoc zsh fish gcc python3 prometheus podman runc mmdebstrap python3-yaml \
    iproute2 libcap2-bin

# One build from scratch: incremental compilation files would only add gigabytes
# to target/ (2.5 GB on a fresh run) without speeding anything up here.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
echo "test.sh: $(df -h --output=avail . | tail -1 | tr -d ' ') free on the disk of $(pwd)"

echo "test.sh: cargo fmt --check"
cargo fmt --all -- --check
echo "test.sh: cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "test.sh: the daemon's dependencies (no OpenSSL, plotting, lab)"
scripts/check-daemon-deps.sh
echo "test.sh: the supply chain (cargo-deny, offline: licences, duplicates, sources, advisories)"
scripts/check-supply-chain.sh --self-test
scripts/check-supply-chain.sh
echo "test.sh: the systemd unit (systemd-analyze verify and security)"
scripts/check-systemd-unit.sh
echo "test.sh: the alert rules and the dashboard (promtool check rules, promtool test rules)"
scripts/check-monitoring.sh
echo "test.sh: cargo test"
scripts/ensure-ntpd-rs.sh
scripts/ensure-ntpsec.sh
scripts/ensure-roughenough.sh
scripts/ensure-report-check.sh >/dev/null
# The interop tests record what they proved here; the matrix is built from it.
rm -rf target/tmp/interop-rows
cargo test --workspace --locked
echo "test.sh: the soak's short mode (issue 29: about 2.5 minutes of load and every fault, verdict PASS)"
scripts/soak.sh
echo "test.sh: the interop matrix (README.md lists what this run proved, nothing else)"
scripts/interop-matrix.sh --check
echo "test.sh: the Debian package (build, lintian, dpkg -i, run, remove, purge)"
scripts/check-deb.sh
echo "test.sh: the container image (issue 30: built from Debian packages and the .deb, run read-only, non-root, queried)"
scripts/check-container.sh
echo "test.sh: the Kubernetes manifests of the fleet, played with podman kube play (issue 30)"
scripts/check-fleet.sh
echo "test.sh: fuzz targets, a few seconds each (AUTHTIME_SKIP_FUZZ=1 skips)"
scripts/fuzz-ci.sh
echo "test.sh: target/ holds $(du -sh target | cut -f1) after the run"
