#!/usr/bin/env bash
# Make a Docker engine answer and build the images the docker runner needs, without a registry.
# `reprospec docker setup` runs this file (it ships in the package, beside the Dockerfile it
# builds); in a checkout, `bash scripts/docker-setup.sh` does the same.
#
#   1. apt-get install docker.io mmdebstrap      (only when dockerd/mmdebstrap are missing)
#   2. start dockerd in the background            (only when no engine answers)
#   3. reprospec-base:bookworm                    (mmdebstrap | docker import; only when missing
#                                                  or built with other packages: gdb came later)
#   4. reprospec-runner:latest                    (Dockerfile beside this file: base + torch
#                                                  from a wheelhouse;
#                                                  only when missing or built on another base)
#
# Idempotent: a second call checks and prints "ok" for each step in about a second. Each image
# carries a label saying what it was built from, so an image from an older recipe is rebuilt.
# Environment: REPROSPEC_WHEELHOUSE (default ~/.cache/reprospec/wheelhouse),
# REPROSPEC_PACKAGES (default "torch==2.13.0 numpy"), REPROSPEC_DOCKERD_LOG (default /tmp/reprospec-dockerd.log),
# REPROSPEC_PYTHON (the interpreter whose pip downloads the wheels; default python3: the
# command passes its own, which has pip as a dependency of reprospec).
set -euo pipefail

# This folder (reprospec/runners/docker/) and the package above it, in a checkout or in
# site-packages alike: the harness and stackdump the image carries are the package's own.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PACKAGE=$(cd "$HERE/../.." && pwd)
DOCKERFILE="$HERE/Dockerfile"
PYTHON=${REPROSPEC_PYTHON:-python3}
BASE_IMAGE=reprospec-base:bookworm
RUNNER_IMAGE=reprospec-runner:latest
PACKAGES=${REPROSPEC_PACKAGES:-torch==2.13.0 numpy}
WHEELHOUSE=${REPROSPEC_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/reprospec/wheelhouse}
DOCKERD_LOG=${REPROSPEC_DOCKERD_LOG:-/tmp/reprospec-dockerd.log}
# The base's Debian packages: gdb and binutils (c++filt) read native stacks in containers;
# libc6-dbg names libc's internal functions in them (`__strlen_evex`, `__lll_lock_wait`).
BASE_PACKAGES=python3,python3-pip,ca-certificates,gdb,binutils,libc6-dbg
BASE_LABEL=org.reprospec.base-packages
# The runner image is current while it was built on this base from this Dockerfile.
RUNNER_LABEL=org.reprospec.built-from
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

T0=$(date +%s)
step_start() { STEP_T0=$(date +%s.%N); }
# awk, not bc: a pip user's machine may lack bc, and a failed printf would end the script.
step_done() { awk -v a="$STEP_T0" -v b="$(date +%s.%N)" -v what="$1" -v how="$2" \
    'BEGIN { printf "docker-setup: %-28s %s (%.1fs)\n", what, how, b - a }'; }
label_of() { docker image inspect -f "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true; }
engine_answers() { timeout 5 docker version --format '{{.Server.APIVersion}}' >/dev/null 2>&1; }

# The Debian mirror apt is configured with (deb822 *.sources or one-line sources.list).
debian_mirror() {
    local uri
    uri=$(awk '
        /^URIs:/ { uris = $2 }
        /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") { print uris; exit } }
    ' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
    if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
        uri=$(awk '$1 == "deb" && $0 ~ / bookworm / { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; exit } }' \
            /etc/apt/sources.list | head -n1)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

# 1. packages
step_start
if command -v dockerd >/dev/null && command -v docker >/dev/null && command -v mmdebstrap >/dev/null; then
    step_done "packages" "ok (already installed)"
else
    export DEBIAN_FRONTEND=noninteractive
    if ! $SUDO apt-get install -y --no-install-recommends docker.io mmdebstrap >/tmp/reprospec-apt.log 2>&1; then
        # Stale package lists: refresh once, then retry.
        $SUDO apt-get update >>/tmp/reprospec-apt.log 2>&1
        $SUDO apt-get install -y --no-install-recommends docker.io mmdebstrap >>/tmp/reprospec-apt.log 2>&1 \
            || { tail -n 20 /tmp/reprospec-apt.log >&2; exit 1; }
    fi
    step_done "packages" "installed docker.io mmdebstrap"
fi

# 2. engine
step_start
if engine_answers; then
    step_done "engine" "ok (already answering)"
else
    # No systemd here: start the daemon detached so it outlives this script.
    $SUDO setsid nohup dockerd >"$DOCKERD_LOG" 2>&1 </dev/null &
    for _ in $(seq 1 300); do
        engine_answers && break
        sleep 0.1
    done
    if ! engine_answers; then
        echo "docker-setup: dockerd did not answer within 30 s; log tail:" >&2
        tail -n 20 "$DOCKERD_LOG" >&2
        exit 1
    fi
    step_done "engine" "started dockerd (log: $DOCKERD_LOG)"
fi

# 3. base image, built from Debian packages: no registry involved
step_start
if [ "$(label_of "$BASE_IMAGE" "$BASE_LABEL")" = "$BASE_PACKAGES" ]; then
    step_done "$BASE_IMAGE" "ok (present)"
else
    MIRROR=$(debian_mirror)
    $SUDO mmdebstrap --quiet --variant=apt --include="$BASE_PACKAGES" \
        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        bookworm - "$MIRROR" 2>/tmp/reprospec-mmdebstrap.log \
        | docker import -c "LABEL $BASE_LABEL=$BASE_PACKAGES" -c 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null \
        || { tail -n 20 /tmp/reprospec-mmdebstrap.log >&2; exit 1; }
    step_done "$BASE_IMAGE" "built with mmdebstrap from $MIRROR"
fi

# 4. runner image: ./Dockerfile over a context holding certs, wheels, the harness
step_start
BASE_ID=$(docker image inspect -f '{{.Id}}' "$BASE_IMAGE")
BUILT_FROM="$BASE_ID $(sha256sum "$DOCKERFILE" | cut -d' ' -f1)"
if [ "$(label_of "$RUNNER_IMAGE" "$RUNNER_LABEL")" = "$BUILT_FROM" ]; then
    step_done "$RUNNER_IMAGE" "ok (present)"
else
    mkdir -p "$WHEELHOUSE"
    # pip's own configuration (find-links, index, certs) decides where the wheels come from.
    "$PYTHON" -m pip download --quiet --disable-pip-version-check $PACKAGES -d "$WHEELHOUSE" \
        2>/tmp/reprospec-pip.log || { tail -n 20 /tmp/reprospec-pip.log >&2; exit 1; }
    CONTEXT=$(mktemp -d)
    trap 'rm -rf "$CONTEXT"' EXIT
    mkdir -p "$CONTEXT/certs" "$CONTEXT/harness" "$CONTEXT/stackdump"
    cp /usr/local/share/ca-certificates/*.crt "$CONTEXT/certs/" 2>/dev/null || true
    # Hard links keep a 200 MB wheelhouse from being copied (cross-device: copy).
    cp -al "$WHEELHOUSE" "$CONTEXT/wheels" 2>/dev/null || cp -a "$WHEELHOUSE" "$CONTEXT/wheels"
    for part in harness stackdump; do
        if [ -d "$PACKAGE/$part" ]; then
            (cd "$PACKAGE/$part" && tar --exclude=__pycache__ -cf - .) | tar -xf - -C "$CONTEXT/$part"
        fi
    done
    DOCKER_BUILDKIT=0 docker build --quiet --build-arg "BASE=$BASE_IMAGE" --build-arg "PACKAGES=$PACKAGES" \
        --label "$RUNNER_LABEL=$BUILT_FROM" \
        -t "$RUNNER_IMAGE" -f "$DOCKERFILE" "$CONTEXT" >/tmp/reprospec-build.log 2>&1 \
        || { tail -n 30 /tmp/reprospec-build.log >&2; exit 1; }
    step_done "$RUNNER_IMAGE" "built from $DOCKERFILE ($PACKAGES, wheelhouse $WHEELHOUSE)"
fi

echo "docker-setup: done in $(( $(date +%s) - T0 )) s"
