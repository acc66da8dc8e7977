#!/usr/bin/env bash
# The checkout's way to `reprospec docker setup`, without installing reprospec first: the
# script ships in the package (reprospec/runners/docker/setup.sh), so a pip user has it too.
set -euo pipefail
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/reprospec/runners/docker/setup.sh" "$@"
