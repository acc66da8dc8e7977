#!/usr/bin/env bash
# Install everything the tests need into .venv, then run ruff, mypy and pytest.
# In CI (CI=true) or with REPROSPEC_DOCKER=1 it also installs and starts a Docker
# engine and builds the test images, so the docker runner is tested for real; in CI
# (or with REPROSPEC_SLURM=1) it sets up a one-host Slurm cluster for the Slurm tests.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
# This run's own logs (apt, the public base): two runs on one machine never share a file.
logs=$(mktemp -d "${TMPDIR:-/tmp}/reprospec-test.XXXXXX")
keep_logs=""  # set where a step failed: its log is named, so it stays
trap '[ -n "$keep_logs" ] || rm -rf "$logs"' EXIT
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch is not a dependency of the engine: the tests install it to drive the
# workload harness in child processes (2.13.0 is a CPU build on these machines).
.venv/bin/python -m pip install -q -e '.[dev]' 'torch==2.13.0'

docker=false
if [ "${CI:-}" = "true" ] || [ "${REPROSPEC_DOCKER:-}" = "1" ]; then
  docker=true
  bash scripts/docker-setup.sh
fi
# A one-host Slurm cluster (slurmctld, slurmd, munge, two fake GPUs) for tests/real/slurm/.
if [ "${CI:-}" = "true" ] || [ "${REPROSPEC_SLURM:-}" = "1" ]; then
  bash scripts/slurm-setup.sh
fi

# Native stacks of crashes and hangs (reprospec/native/) are read by eu-stack (elfutils),
# and by gdb where it is missing or for what it could not read; c++filt from binutils
# demangles C++ names (py-spy, for a core's Python stacks, comes with the dev extra).
# The attempt starter (reprospec/process/starter.c) needs a C compiler and the C library's
# headers. In CI, or as root, install them when missing; elsewhere those tests say
# "skipped: gdb not installed" / "skipped: eu-stack and gdb both needed" / "no C compiler".
native_tools_missing() {
  command -v gdb >/dev/null && command -v c++filt >/dev/null || return 0
  command -v eu-stack >/dev/null || return 0
  # A compiler that builds against the C library's headers (libc6-dev), as starter.py does.
  printf '#include <sys/syscall.h>\nint main(void) { return 0; }\n' \
    | cc -x c -o /dev/null - >/dev/null 2>&1 || return 0
  return 1
}
if { [ "${CI:-}" = "true" ] || [ "$(id -u)" = 0 ]; } && command -v apt-get >/dev/null \
   && native_tools_missing; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  packages="gdb elfutils binutils gcc libc6-dev"
  if ! $SUDO apt-get install -y --no-install-recommends $packages >"$logs/apt-gdb.log" 2>&1; then
    $SUDO apt-get update >>"$logs/apt-gdb.log" 2>&1  # stale package lists: refresh once
    $SUDO apt-get install -y --no-install-recommends $packages >>"$logs/apt-gdb.log" 2>&1 \
      || { keep_logs=1; tail -n 20 "$logs/apt-gdb.log" >&2; exit 1; }
  fi
fi

# The HTML report is checked in a real headless browser (tests/real/browser/):
# Chromium from the system packages. In CI (or with REPROSPEC_BROWSER=1) install it when
# missing; elsewhere that test says "skipped: chromium not installed".
if { [ "${CI:-}" = "true" ] || [ "${REPROSPEC_BROWSER:-}" = "1" ]; } && command -v apt-get >/dev/null \
   && ! command -v chromium >/dev/null; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  if ! $SUDO apt-get install -y --no-install-recommends chromium >"$logs/apt-chromium.log" 2>&1; then
    $SUDO apt-get update >>"$logs/apt-chromium.log" 2>&1  # stale package lists: refresh once
    $SUDO apt-get install -y --no-install-recommends chromium >>"$logs/apt-chromium.log" 2>&1 \
      || { keep_logs=1; tail -n 20 "$logs/apt-chromium.log" >&2; exit 1; }
  fi
fi

# The bundle tests' stand-in for debian:bookworm-slim (tests/support/docker.py: no registry
# answers here), built with mmdebstrap while ruff and mypy run: on a fresh machine it is a
# minute or two of downloads and dpkg that one worker would otherwise spend in the suite.
public_base_pid=""
if [ "$docker" = true ]; then
  .venv/bin/python -m tests.support.docker >"$logs/public-base.log" 2>&1 &
  public_base_pid=$!
fi

# Each pytest-xdist worker collects the whole suite, and pytest rewrites every test module's
# asserts before it imports it: about 17 s of CPU per worker without pytest's cached
# rewrites (a fresh checkout), 6-7 s with them. One collection beside mypy (which keeps
# one core busy) writes them for the three workers; `wait` below, before pytest. Where
# Python writes no bytecode (PYTHONDONTWRITEBYTECODE) it writes nothing, and costs nothing
# but that one core's idle time.
.venv/bin/python -m pytest --collect-only -q -p no:cacheprovider tests >/dev/null 2>&1 &
collect_pid=$!

.venv/bin/ruff check reprospec tests benchmarks scripts examples
.venv/bin/ruff format --check reprospec tests benchmarks scripts examples
.venv/bin/mypy reprospec tests
# The child-side programs (reprospec/harness/: the `reprospec_harness` package and
# reprospec_forkserver.py) import themselves as top-level modules, so they are checked in a
# run of their own, from their folder (pyproject's `exclude` keeps them out of the run above;
# matched against paths relative to here, it does not match them), with the same settings
# and torch's own types (installed above).
(cd reprospec/harness && ../../.venv/bin/mypy --cache-dir ../../.mypy_cache -p reprospec_harness -m reprospec_forkserver)
wait "$collect_pid" || true  # a collection error is the suite's to report, below
if [ -n "$public_base_pid" ] && ! wait "$public_base_pid"; then
  # Not fatal here: the bundle tests build it again, and fail saying why if it fails again.
  keep_logs=1
  echo "test.sh: building the bundle tests' public base failed ($logs/public-base.log):" >&2
  tail -n 5 "$logs/public-base.log" >&2
fi
# With -n N, xdist's default `--dist load` hands each worker a share of the queue up front and
# never takes it back: in a full run of `-n 2` one worker ran out of tests while the other
# still held about 235 of them (the examples, the docs' and the plugin's runs, tests/real/),
# the suite's last 10 minutes or more on one worker. `worksteal` moves queued tests from the
# busy worker to the idle one. Without -n it does nothing; a --dist given here comes later
# and wins.
# Three workers for these 2-core machines unless the arguments choose (`-n 0`: serial): a
# third runs while two wait on what no process of the suite counts (containers, Slurm jobs,
# hangs to their timeout); tests/support/schedule.py starts each with its long modules.
workers=(-n 3)
for arg in "$@"; do
  case $arg in -n|-n*|--numprocesses|--numprocesses=*) workers=() ;; esac
done
.venv/bin/python -m pytest -q -rs --dist worksteal "${workers[@]}" "$@"
