#!/usr/bin/env bash
# Builds the Debian package `authtime` (authtimed, the authtime tool, the
# systemd unit, /etc/authtime/authtimed.toml, man pages and completions) with
# cargo-deb, from [package.metadata.deb] in crates/authtimed/Cargo.toml.
# Prints the path of the .deb on standard output. cargo-deb is installed with
# `cargo install` when missing (once per machine, into ~/.cargo/bin).
#
#   scripts/build-deb.sh            # -> target/debian/authtime_0.1.0-1_amd64.deb
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO_DEB_VERSION=3.8.0
# dpkg-shlibdeps (dpkg-dev) fills in the library dependencies; gzip the man pages.
scripts/ensure-packages.sh dpkg-dev gzip >&2
if [ "$(cargo deb --version 2>/dev/null | awk '{print $2}')" != "$CARGO_DEB_VERSION" ]; then
    echo "build-deb: installing cargo-deb $CARGO_DEB_VERSION (once per machine)" >&2
    cargo install --quiet --locked cargo-deb --version "$CARGO_DEB_VERSION" >&2
fi
echo "build-deb: release build of authtimed and authtime" >&2
cargo build --release --locked -p authtimed -p authtime >&2
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
man_out="$target_dir/release/deb-assets/man"
rm -rf "$man_out"
mkdir -p "$man_out"
for page in dist/man/*.[158]; do
    # -n: no name or time stamp inside, so the package is reproducible.
    gzip -9n <"$page" >"$man_out/$(basename "$page").gz"
done
cargo deb --no-build --strip --locked -p authtimed --output "$target_dir/debian/" >&2
deb="$(ls -t "$target_dir"/debian/authtime_*.deb | head -n 1)"
# cargo-deb writes no md5sums: add them (as dh_md5sums does, without the
# conffiles, which dpkg tracks on its own) and pack the tree again.
unpacked="$(mktemp -d)"
trap 'rm -rf "$unpacked"' EXIT
dpkg-deb -R "$deb" "$unpacked/pkg"
(cd "$unpacked/pkg" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' \
    | sort -z | xargs -0 md5sum) >"$unpacked/pkg/DEBIAN/md5sums"
chmod 644 "$unpacked/pkg/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$unpacked/pkg" "$deb" >/dev/null
echo "$deb"
