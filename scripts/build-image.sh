#!/usr/bin/env bash
# Builds a container image from Debian packages only, without a base image
# (issue 30; docs/container.md): mmdebstrap installs Debian 12's essential
# packages and the image's own, and the root filesystem becomes the one
# layer of a docker-archive written by scripts/image-archive.py, which
# `podman load` reads. Nothing is downloaded from a container registry.
#
#   scripts/build-image.sh authtimed   # Debian's essential set + authtime's .deb (scripts/build-deb.sh)
#   scripts/build-image.sh redis       # Debian's essential set + redis-server (data node and sentinel)
#
# Prints the image's name (localhost/authtimed:VERSION, localhost/authtime-redis:7)
# on standard output; progress goes to standard error.
#
# Reproducible here means: the same inputs (this script, the .deb, the
# package versions the mirror serves) give the same root filesystem tar and
# the same image id. mmdebstrap normalizes timestamps to SOURCE_DATE_EPOCH
# (the last commit's time) and drops the files that differ from run to run;
# the archive's metadata carries only that time. No snapshot mirror is
# reachable from this machine, so the package versions are those of
# deb.debian.org on the day of the build (they are listed in the image,
# /usr/share/authtime-image/packages, and printed below).
#
# Cache: ${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}/images/KIND-KEY.tar,
# KEY a hash of this script, image-archive.py, the .deb and the Release
# files of the host's apt lists (which name the package versions on offer).
# AUTHTIME_IMAGE_REBUILD=1 ignores the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:?usage: scripts/build-image.sh authtimed|redis}"
scripts/ensure-packages.sh mmdebstrap podman runc python3 >&2

export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 1767225600)}"
mirror="http://deb.debian.org/debian"
security="http://deb.debian.org/debian-security"
# Files the image need not carry (documentation, man pages, translations,
# shell completions); the copyright files stay.
dpkg_opts=(
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-exclude=/usr/share/lintian/*'
    --dpkgopt='path-exclude=/usr/share/bash-completion/*'
    --dpkgopt='path-exclude=/usr/share/zsh/*'
    --dpkgopt='path-exclude=/usr/share/fish/*'
)
case "$kind" in
authtimed)
    deb="${AUTHTIME_DEB:-$(scripts/build-deb.sh)}"
    includes=("$(realpath "$deb")")
    version="$(dpkg-deb -f "$deb" Version)"
    version="${version%-*}"
    name="localhost/authtimed:$version"
    user=authtime
    ;;
redis)
    deb=""
    includes=(redis-server)
    version=7
    name="localhost/authtime-redis:$version"
    user=redis
    ;;
*)
    echo "build-image: unknown image $kind (authtimed or redis)" >&2
    exit 2
    ;;
esac

cache="${AUTHTIME_PEER_CACHE:-$HOME/.cache/authtime-peers}/images"
mkdir -p "$cache"
key="$(
    {
        echo "$kind $SOURCE_DATE_EPOCH"
        sha256sum scripts/build-image.sh scripts/image-archive.py | cut -d' ' -f1
        if [ -n "$deb" ]; then sha256sum "$deb" | cut -d' ' -f1; fi
        cat /var/lib/apt/lists/*_InRelease 2>/dev/null | grep -E '^(Date|Origin|Suite):' || true
    } | sha256sum | cut -c1-16
)"
archive="$cache/$kind-$key.tar"

if [ -s "$archive" ] && [ "${AUTHTIME_IMAGE_REBUILD:-0}" != 1 ]; then
    echo "build-image: $kind: cached $archive" >&2
else
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    echo "build-image: $kind: mmdebstrap bookworm (essential + ${includes[*]##*/}), SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH" >&2
    # merged-usr: the /usr merge made by mmdebstrap itself, else bookworm's
    # usr-is-merged pulls in usrmerge and with it the whole of Perl (47 MB).
    # The customize hooks record the package list inside the image, then drop
    # what differs from build to build or is of no use in a container.
    mmdebstrap --quiet --variant=essential --mode=root \
        --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
        "${dpkg_opts[@]}" \
        --include="${includes[0]}" \
        --customize-hook='mkdir -p "$1/usr/share/authtime-image"' \
        --customize-hook='chroot "$1" dpkg-query -W -f "\${Package} \${Version}\n" | LC_ALL=C sort >"$1/usr/share/authtime-image/packages"' \
        --customize-hook='rm -f "$1"/var/log/dpkg.log "$1"/var/log/apt/* "$1"/var/log/alternatives.log "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old "$1"/etc/machine-id "$1"/var/lib/dbus/machine-id' \
        --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
        bookworm "$work/rootfs.tar" \
        "deb $mirror bookworm main" "deb $mirror bookworm-updates main" "deb $security bookworm-security main" >&2
    python3 scripts/image-archive.py --kind "$kind" --rootfs "$work/rootfs.tar" --name "$name" \
        --user "$user" --version "$version" --out "$work/image.tar" 2>"$work/summary"
    mv "$work/summary" "$archive.txt"
    mv "$work/image.tar" "$archive"
fi
cat "$archive.txt" >&2
podman load --quiet -i "$archive" >&2
echo "build-image: $kind: $name is $(podman image inspect --format '{{.Size}}' "$name" | awk '{printf "%.1f MB", $1/1e6}') in podman's store" >&2
echo "$name"
