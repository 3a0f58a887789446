# Sourced by scripts/check-container.sh and scripts/check-fleet.sh: how
# podman runs here, and which image tags are ours.
#
# The host's cgroups are hybrid: crun refuses them, runc runs; containers
# get explicit limits, which podman cannot raise from the defaults here.
# `podman_conf DIR` writes that into DIR/containers.conf and exports
# CONTAINERS_CONF (podman kube play's pod infra container needs it too).
podman_conf() {
    export CONTAINERS_CONF="$1/containers.conf"
    cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
EOF
}

# The image tags of authtime's images in podman's store, sorted: a run
# removes at its end the ones it loaded that were not there before it.
images_of_ours() {
    podman images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null |
        { grep -E '^localhost/authtime(d|-redis):' || true; } | sort
}
