#!/usr/bin/env python3
"""Turns the fleet's Kubernetes manifests (dist/kubernetes/) into the files
scripts/check-fleet.sh plays with `podman kube play`, one per pod, changing
only what podman 4.3 needs or what keeps a test run apart from anything else
on the machine:

- every object's name (Deployments, ConfigMaps, volumes) gets the
  run's PREFIX, so that the pods and volumes of one run clash with
  nothing; the names the pods use for each other stay (podman gives each
  pod its Deployment's name as a DNS alias on the test's network, as a
  Kubernetes Service would);
- a Deployment of N replicas becomes N Deployments of one (podman plays one
  replica a Deployment), named NAME-a, NAME-b, ...;
- the containers' `ports` go: podman 4.3 would publish each on the host's
  every address (and three replicas would clash); the pods reach each other
  on the test's network without them;
- Secret volumes become hostPath volumes of the Secrets' files, decoded from
  the manifest make-secrets.sh wrote, mode 0440 and group 101 as Kubernetes
  makes them with the manifests' defaultMode and fsGroup: podman 4.3 writes a
  Secret's `data` into the files still in base64 (and ignores `stringData`);
- `--replace OLD NEW` rewrites text in the ConfigMap (the test's lab
  clock: the host's own may be unsynchronized).

    fleet-manifests.py --prefix P --out DIR --secrets FILE [--replace OLD NEW]... config.yaml redis.yaml authtimed.yaml

Writes one file per pod, DIR/NAME.yaml (the ConfigMaps with each), and
prints a line per file: FILE, the Deployment's name (the alias the pod gets
on the network, as its Service's name) and the pod's NAME.
"""

import argparse
import base64
import copy
import os
import string

import yaml


def prefixed_pod(deployment, configmaps, secret_dirs, prefix, name):
    """One Deployment of one replica named PREFIX+name, its volumes and the
    ConfigMaps and Secrets it names prefixed too."""
    d = copy.deepcopy(deployment)
    d["metadata"]["name"] = prefix + name
    d["spec"]["replicas"] = 1
    pod = d["spec"]["template"]["spec"]
    renames = {}
    for volume in pod.get("volumes", []):
        old = volume["name"]
        # Per pod, as an emptyDir is (podman makes it a named volume).
        volume["name"] = renames[old] = f"{prefix}{name}-{old}"
        if "secret" in volume:
            volume["hostPath"] = {"path": secret_dirs[volume.pop("secret")["secretName"]], "type": "Directory"}
        if "configMap" in volume:
            volume["configMap"]["name"] = prefix + volume["configMap"]["name"]
    for container in pod.get("initContainers", []) + pod["containers"]:
        for mount in container.get("volumeMounts", []):
            mount["name"] = renames[mount["name"]]
        # podman 4.3 publishes every containerPort on the host's wildcard
        # address; the pods reach each other on the test's network anyway.
        container.pop("ports", None)
    return [copy.deepcopy(c) for c in configmaps] + [d]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--replace", nargs=2, action="append", default=[], metavar=("OLD", "NEW"))
    parser.add_argument("--secrets", required=True, help="the Secrets' manifest (make-secrets.sh)")
    parser.add_argument("manifests", nargs="+")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    secret_dirs = {}
    with open(args.secrets) as f:
        for secret in (d for d in yaml.safe_load_all(f) if d):
            name = secret["metadata"]["name"]
            secret_dirs[name] = os.path.join(os.path.abspath(args.out), "secrets", name)
            os.makedirs(secret_dirs[name], exist_ok=True)
            for key, value in secret["data"].items():
                path = os.path.join(secret_dirs[name], key)
                with open(path, "wb") as out:
                    out.write(base64.b64decode(value))
                # As Kubernetes makes them with defaultMode 0440 and fsGroup 101.
                os.chmod(path, 0o440)
                os.chown(path, 0, 101)
    docs = []
    for path in args.manifests:
        with open(path) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    configmaps = []
    for doc in docs:
        if doc["kind"] == "ConfigMap":
            doc = copy.deepcopy(doc)
            doc["metadata"]["name"] = args.prefix + doc["metadata"]["name"]
            for key, text in doc["data"].items():
                for old, new in args.replace:
                    text = text.replace(old, new)
                doc["data"][key] = text
            configmaps.append(doc)
    os.makedirs(args.out, exist_ok=True)
    for doc in docs:
        if doc["kind"] != "Deployment":
            continue
        name = doc["metadata"]["name"]
        replicas = doc["spec"].get("replicas", 1)
        for i in range(replicas):
            pod_name = name if replicas == 1 else f"{name}-{string.ascii_lowercase[i]}"
            path = os.path.join(args.out, f"{pod_name}.yaml")
            with open(path, "w") as f:
                yaml.safe_dump_all(prefixed_pod(doc, configmaps, secret_dirs, args.prefix, pod_name), f, sort_keys=False)
            print(path, name, pod_name)


if __name__ == "__main__":
    main()
