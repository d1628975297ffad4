#!/bin/sh
# Build the gieok image and run it with no network at all: the server starts, /ready answers, a message is
# captured and found again with the bundled model, and a backup is written to the data volume.
#
#   deploy/image-smoke.sh                     # base image from your registry (python:3.11-slim-bookworm)
#   deploy/image-smoke.sh --debootstrap       # no registry: a Debian 12 base made by debootstrap first
#
# Runs the container with `podman run`; where the host forbids that (no CAP_SYS_RESOURCE for crun's rlimits,
# hybrid cgroups — as in some CI sandboxes) it runs the same image with `buildah run --isolation chroot`.
# Either way inside a network namespace with nothing but a loopback device. Needs root, podman and buildah.
set -eu
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-localhost/gieok:smoke}
WORK=${WORK:-/var/tmp/gieok-image}
BUILD_ARGS=""
if [ "${1:-}" = "--debootstrap" ]; then
    BASE=localhost/debian-bookworm-python:local
    if ! podman image exists "$BASE"; then
        mkdir -p "$WORK"
        [ -x "$WORK/rootfs/usr/bin/python3" ] || debootstrap --variant=minbase \
            --include=python3,python3-venv,ca-certificates bookworm "$WORK/rootfs" http://deb.debian.org/debian
        tar -C "$WORK/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE"
    fi
    BUILD_ARGS="--build-arg BASE_IMAGE=$BASE"
fi
# The host's CA bundle is lent to the build's RUN steps only (pip behind a TLS-inspecting proxy); it is not
# copied into the image.
# shellcheck disable=SC2086
podman build --format docker --isolation chroot --network host $BUILD_ARGS \
    -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro -t "$IMAGE" .
podman image inspect "$IMAGE" --format 'image {{.Id}}: user {{.Config.User}}, healthcheck {{.Config.Healthcheck.Test}}, volumes {{.Config.Volumes}}'

DATA=$(mktemp -d /var/tmp/gieok-smoke-data.XXXXXX)
chown 10001:10001 "$DATA"
if podman run --rm --network none "$IMAGE" --version >/dev/null 2>&1; then
    RUNNER=podman
    CTR=""
else
    RUNNER=buildah
    CTR=$(buildah from "$IMAGE")
    trap 'buildah rm "$CTR" >/dev/null' EXIT
    echo "podman run is not possible here ($(podman run --rm --network none "$IMAGE" --version 2>&1 | tail -1)); using buildah run --isolation chroot"
fi

# Everything below runs in a new network namespace: loopback only, no route anywhere.
unshare --net sh -eu -s "$RUNNER" "$IMAGE" "$CTR" "$DATA" <<'INNER'
RUNNER=$1 IMAGE=$2 CTR=$3 DATA=$4
ip link set lo up
run() {   # run one command in the image as its own user, the data dir as /data, loopback only (no auth needed)
    if [ "$RUNNER" = podman ]; then
        podman run --rm --network host -v "$DATA:/data" -e GIEOK_HOST=127.0.0.1 -e GIEOK_AUTH=none "$IMAGE" "$@"
    else
        buildah run --isolation chroot --network host --user 10001:10001 -v "$DATA:/data" \
            --env GIEOK_HOST=127.0.0.1 --env GIEOK_AUTH=none "$CTR" -- gieok "$@"
    fi
}
killtree() {   # the server and what it started, by process id
    for child in $(ps -o pid= --ppid "$1"); do killtree "$child"; done
    kill -TERM "$1" 2>/dev/null || true
}
python3 -c "import socket; socket.create_connection(('151.101.0.223', 443), timeout=2)" 2>/dev/null \
    && { echo "network reachable: the smoke test must run offline"; exit 1; } || echo "network: none (loopback only)"
run serve --transport http > "$DATA/serve.log" 2>&1 &
SERVER=$!
i=0
until run healthcheck --path /ready >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 120 ] || { cat "$DATA/serve.log"; exit 1; }; sleep 1
done
echo "ready after ~${i}s"
python3 - <<'PY'
import json, urllib.request
base = "http://127.0.0.1:8765"
def call(path, body=None):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())
print("health", call("/health"))
print("ready ", call("/ready")["checks"])
print("stored", call("/v1/messages", {"content": "다음 주 화요일에 배포 회의가 있어요", "role": "user"})["stored"])
block = call("/v1/context?query=%EB%B0%B0%ED%8F%AC")
assert "배포 회의" in block["text"], block
print("context finds it:", "배포 회의" in block["text"])
with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
    m = [ln for ln in r.read().decode().splitlines() if ln.startswith("gieok_ingest_total")]
print("metrics", m)
PY
run search "회의" --json | python3 -c "import json,sys; print('search (CLI, in the image):', json.load(sys.stdin)['results'][0]['content'])"
run backup /data/backup.db | tail -2
killtree "$SERVER"
wait "$SERVER" || true
INNER
echo "smoke test passed ($RUNNER)"
