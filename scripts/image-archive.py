#!/usr/bin/env python3
"""Writes a docker-archive (what `podman load` reads) from a root filesystem
tar, as the one layer of the image, with an image configuration whose every
field is fixed by the arguments and SOURCE_DATE_EPOCH: the same rootfs tar
gives the same image id (the id is the hash of the configuration, which
names the layer by its hash).

The docker format rather than OCI's because only its configuration carries a
health check, which podman runs.

    image-archive.py --kind authtimed|redis --rootfs ROOTFS.tar --name NAME:TAG
                     --user NAME --version V --out IMAGE.tar
"""

import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
import time


def member_text(rootfs, path):
    """The text of `path` (with or without a leading ./) in the rootfs tar."""
    with tarfile.open(rootfs) as tar:
        for name in (path, "./" + path):
            try:
                return tar.extractfile(name).read().decode()
            except KeyError:
                continue
    raise SystemExit(f"image-archive: {path} is not in {rootfs}")


def numeric_user(rootfs, user):
    """`UID:GID` of `user` in the rootfs: Kubernetes can only check
    runAsNonRoot against a numeric user."""
    for line in member_text(rootfs, "etc/passwd").splitlines():
        fields = line.split(":")
        if fields[0] == user:
            return f"{fields[2]}:{fields[3]}"
    raise SystemExit(f"image-archive: no user {user} in the rootfs")


def container_config(kind, user, version):
    """What the image runs, per kind (docs/container.md explains each field)."""
    if kind == "authtimed":
        return {
            "User": user,
            # The daemon logs to standard error (as under systemd); the
            # image sends its logs to standard output, one ordered stream
            # with the lines that say where it listens. exec: authtimed is
            # PID 1 and gets the runtime's SIGTERM.
            "Entrypoint": ["/bin/sh", "-c", 'exec /usr/sbin/authtimed "$@" 2>&1', "authtimed"],
            "Cmd": [],
            "Env": [
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "AUTHTIMED_CONFIG=/etc/authtime/authtimed.toml",
                "AUTHTIMED_LOG_FORMAT=json",
            ],
            "ExposedPorts": {
                "123/udp": {},
                "4460/tcp": {},
                "2002/udp": {},
                "2002/tcp": {},
                "9123/tcp": {},
            },
            "WorkingDir": "/var/lib/authtime",
            "Volumes": {"/var/lib/authtime": {}},
            "StopSignal": "SIGTERM",
            "Healthcheck": {
                # The configuration in force (for the clock source and the
                # metrics endpoint) and the server's own NTP port: exit 3
                # when it does not answer or announces unsynchronized.
                "Test": [
                    "CMD-SHELL",
                    'exec authtime status --config "${AUTHTIMED_CONFIG:-/etc/authtime/authtimed.toml}"'
                    ' --server "${AUTHTIME_HEALTH_SERVER:-127.0.0.1:123}" >/dev/null',
                ],
                "Interval": 30 * 10**9,
                "Timeout": 5 * 10**9,
                "StartPeriod": 10 * 10**9,
                "Retries": 3,
            },
            "Labels": {
                "org.opencontainers.image.title": "authtimed",
                "org.opencontainers.image.description": "NTP, NTS and Roughtime server (authtime)",
                "org.opencontainers.image.version": version,
                "org.opencontainers.image.licenses": "MIT OR Apache-2.0",
            },
        }
    return {
        "User": user,
        "Entrypoint": ["/usr/bin/redis-server"],
        "Cmd": [],
        "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        "ExposedPorts": {"6379/tcp": {}, "26379/tcp": {}},
        "WorkingDir": "/var/lib/redis",
        "Labels": {
            "org.opencontainers.image.title": "authtime-redis",
            "org.opencontainers.image.description": "Debian's redis-server, for authtime's NTS fleet",
        },
    }


def add_file(tar, name, data, epoch):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = epoch
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def main():
    parser = argparse.ArgumentParser()
    for option in ("--kind", "--rootfs", "--name", "--user", "--version", "--out"):
        parser.add_argument(option, required=True)
    args = parser.parse_args()
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))

    layer = hashlib.sha256()
    with open(args.rootfs, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            layer.update(chunk)
    diff_id = layer.hexdigest()
    packages = member_text(args.rootfs, "usr/share/authtime-image/packages").splitlines()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": container_config(args.kind, numeric_user(args.rootfs, args.user), args.version),
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [
            {
                "created": created,
                "created_by": f"scripts/build-image.sh {args.kind}: mmdebstrap --variant=essential, "
                f"{len(packages)} Debian packages",
            }
        ],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    config_id = hashlib.sha256(config_bytes).hexdigest()
    manifest = [
        {
            "Config": f"{config_id}.json",
            "RepoTags": [args.name],
            "Layers": [f"{diff_id}/layer.tar"],
        }
    ]
    with tarfile.open(args.out, "w", format=tarfile.PAX_FORMAT) as tar:
        add_file(tar, f"{config_id}.json", config_bytes, epoch)
        info = tar.gettarinfo(args.rootfs, arcname=f"{diff_id}/layer.tar")
        info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = epoch, 0, 0, "", "", 0o644
        with open(args.rootfs, "rb") as f:
            tar.addfile(info, f)
        add_file(tar, "manifest.json", json.dumps(manifest, sort_keys=True).encode(), epoch)
    print(
        f"image-archive: {args.name}: image id {config_id[:12]}, layer {diff_id[:12]} "
        f"({os.path.getsize(args.rootfs) / 1e6:.1f} MB), {len(packages)} packages",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
