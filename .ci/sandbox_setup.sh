#!/usr/bin/env bash
# Prepare a CI machine (Debian/Ubuntu, as root) for the sandbox tests:
# install bubblewrap and Docker, start dockerd when no daemon answers, and build
# the flexmg sandbox image offline. Idempotent; safe to run twice.
# Usage: .ci/sandbox_setup.sh   (then run pytest with FLEXMG_REQUIRE_DOCKER=1)
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi

need=""
command -v bwrap >/dev/null 2>&1 || need="$need bubblewrap"
command -v dockerd >/dev/null 2>&1 || need="$need docker.io"
if [ -n "$need" ]; then
    echo "[sandbox_setup] installing:$need"
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y $need
fi

if ! docker info >/dev/null 2>&1; then
    echo "[sandbox_setup] starting dockerd"
    $SUDO sh -c 'nohup dockerd >/var/log/flexmg-dockerd.log 2>&1 &'
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    if ! docker info >/dev/null 2>&1; then
        echo "[sandbox_setup] dockerd did not come up; its log:" >&2
        tail -n 50 /var/log/flexmg-dockerd.log >&2 || true
        exit 1
    fi
fi

echo "[sandbox_setup] building the sandbox image"
"$PYTHON" -m flexmg.sandboxes build-image
"$PYTHON" -m flexmg.sandboxes status
