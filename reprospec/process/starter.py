"""The attempt starter (starter.c): built once per machine, checked once per engine process.

Every fresh attempt's leader needs two things set between fork and exec: its tag
(RLIMIT_LOCKS, watchdog.py) and death with the engine (PR_SET_PDEATHSIG). Python can
only do that in a preexec_fn, which costs a large engine about 2 ms of CPU per attempt
(a full fork instead of vfork, and Python's after-fork hooks in the child): at 256
trivial cells that was a third of the engine's whole cost. The starter is a tiny C
program doing the same between two execs, so the engine can vfork.

It is compiled from the packaged source with the machine's C compiler (`CC`, else
`cc`, `gcc`, `clang`) into the user's cache (`$XDG_CACHE_HOME/reprospec`, else
`~/.cache/reprospec`), under a name that hashes the source, the build flags and the
machine: a new version or another architecture builds its own. A build is run once
before it is kept, and a kept one is run once per engine process before it is trusted
(a cache on a noexec mount, a binary for another machine). Without a compiler, or if
anything here fails, `find()` says why and the engine starts attempts with a
preexec_fn as before: slower, the same guarantees. `reprospec doctor` shows which.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from reprospec.core.frozen import frozen

SOURCE = Path(__file__).resolve().with_name("starter.c")
BUILD_TIMEOUT_S = 60.0
CHECK_TIMEOUT_S = 10.0
# Raw system calls, no C library (starter.c says why): the architectures it has them for.
_NOLIBC_MACHINES = frozenset({"x86_64", "amd64", "aarch64", "arm64"})
_NOLIBC_FLAGS = (
    "-DSTARTER_NOLIBC",
    "-O2",
    "-static",
    "-nostdlib",
    "-ffreestanding",
    "-fno-stack-protector",
    "-fno-pie",
    "-no-pie",
    "-fno-asynchronous-unwind-tables",
)
_LIBC_FLAGS = ("-O2",)


@frozen
class Starter:
    """The starter this engine process uses, or why it has none (then: preexec_fn)."""

    path: Path | None
    how: str  # what was built or reused, with what; or why there is no starter

    @property
    def ready(self) -> bool:
        return self.path is not None


_lock = threading.Lock()
_found: Starter | None = None


def find() -> Starter:
    """This process's starter: reused from the cache, or built there; once per process."""
    global _found
    with _lock:
        if _found is None:
            _found = locate(cache_dir())
        return _found


def lost(why: str) -> None:
    """The starter failed to start an attempt (it was removed meanwhile): stop using it."""
    global _found
    with _lock:
        _found = Starter(None, f"the starter stopped working: {why}")


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "reprospec"


def _compiler() -> list[str] | None:
    configured = os.environ.get("CC", "").strip()
    if configured:
        argv = shlex.split(configured)
        return argv if shutil.which(argv[0]) else None
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


def _variants() -> list[tuple[str, tuple[str, ...]]]:
    """The builds to try, best first: raw system calls where starter.c has them, then libc."""
    machine = os.uname().machine.lower()
    variants: list[tuple[str, tuple[str, ...]]] = [("libc", _LIBC_FLAGS)]
    if machine in _NOLIBC_MACHINES:
        variants.insert(0, ("raw system calls", _NOLIBC_FLAGS))
    return variants


def locate(folder: Path) -> Starter:
    """The starter kept in `folder`, checked; else built there now; else why there is none."""
    try:
        source = SOURCE.read_bytes()
    except OSError as exc:
        return Starter(None, f"its source is missing: {exc}")
    compiler = _compiler()
    failures: list[str] = []
    for label, flags in _variants():
        key = hashlib.sha256(
            b"\0".join([source, *(f.encode() for f in flags), os.uname().machine.encode()])
        ).hexdigest()[:16]
        path = folder / f"starter-{key}"
        if path.is_file() and _works(path):
            return Starter(path, f"{path} ({label})")
        if compiler is None:
            continue
        built = _build(compiler, flags, folder, path)
        if built is None:
            return Starter(path, f"{path} ({label}, built with {shlex.join(compiler)})")
        failures.append(f"{label}: {built}")
    if compiler is None:
        return Starter(None, "no C compiler (CC, cc, gcc or clang) to build it")
    return Starter(None, "it could not be built: " + "; ".join(failures))


def _build(compiler: list[str], flags: tuple[str, ...], folder: Path, path: Path) -> str | None:
    """Compile into `path` (atomically: engines may build at once); None, or why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".starter-")
        os.close(fd)
    except OSError as exc:
        return f"{folder}: {exc.strerror or exc}"
    try:
        done = subprocess.run(
            [*compiler, *flags, "-o", temporary, str(SOURCE)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            # A compiler's message in a latin-1 locale (`erreur \xe9`), or naming a path that
            # is not UTF-8: read strictly, it ended every run with an internal error.
            errors="replace",
            timeout=BUILD_TIMEOUT_S,
        )
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            return f"{shlex.join(compiler)} exited {done.returncode}: " + (
                lines[0] if lines else "no message"
            )
        os.chmod(temporary, 0o755)  # noqa: PTH101 (mkstemp made it 0600)
        if not _works(Path(temporary)):
            return "the program it built does not run here"
        Path(temporary).replace(path)
        return None
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)  # noqa: PTH108


def _works(path: Path) -> bool:
    """Start the starter through itself, as an attempt would be: it must exit 0, silently.

    The outer one takes every step of an attempt's start (tag, death signal, parent
    check, close-on-exec, exec); the inner one, given no arguments, just exits 0.
    """
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        # ERRFD TAG PARENT CORES CWD CGROUP NPROC PATH ARGV0 (starter.c)
        steps = [str(write_end), "0", str(os.getpid()), "0", "", "", ""]
        argv = [str(path), *steps, str(path), "starter"]
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(write_end,),
            timeout=CHECK_TIMEOUT_S,
        )
        os.close(write_end)
        write_end = -1
        return done.returncode == 0 and not os.read(read_end, 4)
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def exec_error(data: bytes, program: str, cwd: Path) -> OSError:
    """The error the starter reported, as Popen would have raised it: its chdir to `cwd`
    failed (step 1; named as given, as Popen names it), or its exec of `program`."""
    code = int.from_bytes(data[:4].ljust(4, b"\0"), sys.byteorder)
    step = int.from_bytes(data[4:8].ljust(4, b"\0"), sys.byteorder)
    return OSError(code, os.strerror(code), cwd if step == 1 else program)
