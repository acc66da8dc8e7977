"""Digests of secret values, so that `compare` can say a token *changed* without ever
holding it: an HMAC under a key that stays in the results store (`OUT/digest.key`); and
of the program's files (the script, its local imports, the files its command names), so
that `compare` can say `train.py` changed between two runs.

A plain hash of a secret would let anyone who reads results.json (a bundle, a CI
artifact) test guesses of a weak password against it; under a key that never leaves
the store folder it tells nothing to them. Two runs' digests are comparable only
under the same key: each digest is recorded with the key's id, and runs of other
stores are answered "set in both, not comparable" rather than "changed".

A file is digested under the same key, not by a plain sha256: a bundle carries a config
file with its secrets masked beside results.json, and a plain digest of the file as it
ran would let a reader test guesses of the masked value against it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from reprospec.core.jsontypes import JsonObject, JsonValue

KEY_FILE = "digest.key"
# The capture's field holding them (its name must not look secret: redact.py would mask
# a mapping's value under a key named like `secret_*`).
FIELD = "variable_digests"
# The engine's field of the program's files: `{"store": key id, "of": [[PATH, digest]]}`
# (and pipeline/programfiles.py's `named`, `partial` and `skipped`).
FILES_FIELD = "program_files"
# A file over this size is told by its size and modification time (`size:N:mtime:NS`):
# every run digests the program's files before its first attempt, and a 60 MiB input took
# 50 ms of it (a one-attempt run's goal is 250 ms in all); code is far smaller.
DIGEST_LIMIT = 1 << 20
UNDIGESTED = "size:"


def recorded(field: JsonValue) -> tuple[str | None, dict[str, str]]:
    """(the store key's id, name -> digest) of a digest record (FIELD's or FILES_FIELD's
    `{"store": id, "of": [[name, digest]]}`); (None, {}) without one (the id is None too
    where no key was needed: a run that named no file)."""
    if not isinstance(field, Mapping) or not isinstance(field.get("of"), list):
        return None, {}
    pairs = [p for p in field["of"] if isinstance(p, list) and len(p) == 2]  # type: ignore[union-attr]
    store = field.get("store")
    return (None if store is None else str(store)), {str(n): str(d) for n, d in pairs}


def recorded_files(environment: Mapping[str, JsonValue]) -> tuple[str, ...]:
    """The program's files a run recorded digests of (FILES_FIELD's `of`), by the names it
    recorded them under (relative to the spec's folder where inside it), sorted."""
    return tuple(sorted(recorded(environment.get(FILES_FIELD))[1]))


def store_key(out: Path) -> bytes:
    """The store's key, made once (readable by its owner only) on first use.

    Written whole under a name of its own, then linked into place: two runs that start at
    once use the one linked first, and neither reads a key half written (an empty file
    read as the empty key digested every secret alike)."""
    path = out / KEY_FILE
    try:
        return read_key(path)
    except FileNotFoundError:
        pass
    import secrets  # (hmac and secrets: only where something is digested)

    out.mkdir(parents=True, exist_ok=True)
    staged = out / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_bytes(32).hex())
        with contextlib.suppress(FileExistsError):  # another run made it first: theirs
            os.link(staged, path)
    finally:
        staged.unlink(missing_ok=True)
    return read_key(path)


class RunKey:
    """The store's key as one run digests under it: read (in a new store, made) at its first
    use, and that key, or that failure, kept for the rest of the run.

    A run digests three things under it: the program's files as it begins
    (pipeline/programfiles.py), the secret variables its spec reads (store/specvariables.py)
    and those its environment capture saw (pipeline/stages.py, on the capture's thread,
    hence the lock). Each called `store_key` for itself, and the file was read up to three
    times per run. Read at the first use, not as the run begins: a run with
    nothing to digest (`true`, no secret, a docker capture that inherits nothing) makes no
    key, as before. A store that cannot keep one raises the same OSError to each user,
    which each says in its own way, as when each read it.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self._lock = threading.Lock()
        self._read: bytes | OSError | None = None  # None: not read yet

    def get(self) -> bytes:
        """The key (OSError where the store cannot keep one: the first read's, again)."""
        with self._lock:
            if self._read is None:
                try:
                    self._read = store_key(self.out)
                except OSError as exc:
                    self._read = exc
            read = self._read
        if isinstance(read, OSError):
            raise read
        return read


def read_key(path: Path) -> bytes:
    """The key in `path`; OSError for a file that holds none (the caller records no
    digests then: compare tells such runs' secrets set or unset only)."""
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (ValueError, UnicodeDecodeError):
        key = b""
    if len(key) < 16:
        raise OSError(f"{path}: not a key (remove it: the next run makes one)")
    return key


# The capture's field of the variables every attempt inherited from the engine's shell
# that the capture's table does not show (`MYAPP_MODE=1 reprospec run ...`): digests only,
# since such a variable may hold anything (`DATABASE_URL` with its password), so that
# `compare` can say it was set, unset or changed where it said "same environment".
INHERITED_FIELD = "inherited_digests"
# The GPUs a scheduler handed a job (Slurm's GRES sets CUDA_VISIBLE_DEVICES and
# GPU_DEVICE_ORDINAL, ROCm's and oneAPI's theirs): `0` in one shard and `1` in the next, as
# another `--gpus` is one command's. merge passes over them all ("shards ran in different
# environments"); CUDA_VISIBLE_DEVICES is a variable the capture shows, the others are
# digested as any inherited variable is, so that `compare` of a failing and a passing
# ROCm run still says `HIP_VISIBLE_DEVICES: changed`.
HANDED_OUT_GPUS = frozenset(
    {
        "CUDA_VISIBLE_DEVICES",
        "GPU_DEVICE_ORDINAL",
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "ZE_AFFINITY_MASK",
    }
)
# A shell's session and a CI job's bookkeeping: they differ between any two shells, and
# would bury the variable that changed under noise (the prefixes end in `_`).
SESSION_VARIABLES = frozenset(
    {
        "_", "PWD", "OLDPWD", "SHLVL", "TERM", "COLORTERM", "LS_COLORS", "LSCOLORS", "PS1",
        "PS2", "PS4", "PROMPT_COMMAND", "HISTFILE", "HISTSIZE", "HISTFILESIZE",
        "HISTCONTROL", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "GPG_TTY",
        "GPG_AGENT_INFO", "TMUX", "TMUX_PANE", "STY", "WINDOW", "COLUMNS", "LINES", "MAIL",
        "MOTD_SHOWN", "INVOCATION_ID", "JOURNAL_STREAM", "SECURITYSESSIONID", "WT_SESSION",
        "WINDOWID", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_CLIENT", "SSH_CONNECTION",
        "SSH_TTY", "HOSTNAME", "HOST", "ENVIRONMENT", "BUILD_ID", "BUILD_NUMBER",
        "BUILD_URL", "BUILD_TAG", "NODE_NAME", "EXECUTOR_NUMBER", "WORKSPACE",
        "XAUTHORITY", "KRB5CCNAME", "SESSION_MANAGER", "VTE_VERSION",
        "GNOME_TERMINAL_SCREEN", "GNOME_TERMINAL_SERVICE", "DESKTOP_SESSION",
        # pytest's name of the test now running: the plugin's runs, one per cell, inherit
        # it, and each cell's was "changed" (merge: "shards ran in different environments").
        "PYTEST_CURRENT_TEST",
    }
)  # fmt: skip
# (`SLURM`: SLURMD_NODENAME too; a scheduler's and MPI's per-job names differ by shard;
# `PYTEST_XDIST_`: an xdist worker's name and its session's id, new in every session.)
SESSION_PREFIXES = (
    "XDG_", "TERM_", "SSH_", "VSCODE_", "ITERM_", "KITTY_", "GITHUB_", "RUNNER_", "CI_",
    "GITLAB_", "JENKINS_", "BUILDKITE", "CIRCLE_", "TRAVIS_", "SLURM", "PBS_", "LSB_",
    "PMI_", "PMIX_", "OMPI_", "REPROSPEC_", "PYTEST_XDIST_",
)  # fmt: skip


def inherited_names(environ: Mapping[str, str], shown: Iterable[str]) -> list[str]:
    """The variables of `environ` worth a digest: not `shown` by value (the capture's table,
    the spec's own `environment.env`), not a shell's or a CI job's bookkeeping."""
    skip = set(shown)
    return sorted(
        name
        for name in environ
        if name not in skip
        and name not in SESSION_VARIABLES
        and not name.startswith(SESSION_PREFIXES)
    )


def variable_digests(key: bytes, values: Mapping[str, str], names: Iterable[str]) -> JsonObject:
    """`{"store": key id, "of": [[NAME, digest], ...]}` for those of `names` whose value is
    known (no field is named `key`: redact.py would mask its value)."""
    import hmac

    of: list[JsonValue] = [
        # os.fsencode: a value of bytes that are no UTF-8 (held as surrogates) digests as
        # those bytes, where .encode() raised and the run lost its whole environment.
        [name, hmac.new(key, os.fsencode(values[name]), hashlib.sha256).hexdigest()[:16]]
        for name in sorted(names)
        if name in values
    ]
    return {"store": key_id(key), "of": of}


def file_digests(key: bytes | None, files: Mapping[str, Path]) -> JsonObject:
    """`{"store": key id, "of": [[NAME, digest], ...]}` of each file by the name `files`
    gives it (sorted); `key` None only where there are no files (no key is made for none:
    the store id is then None, and nothing is compared by digest)."""
    of: list[JsonValue] = []
    if key is None and files:
        raise ValueError("files are digested under the store's key")
    for name in sorted(files):
        of.append([name, file_digest(key or b"", files[name])])
    return {"store": key_id(key) if key else None, "of": of}


def key_id(key: bytes) -> str:
    """The id of a store's key its digests are recorded under (`store`): which store's key
    they were taken with, without the key."""
    return hashlib.sha256(key).hexdigest()[:8]


def file_digest(key: bytes, path: Path) -> str:
    """HMAC-SHA256 of the file's bytes under `key` (32 hex digits); `size:N:mtime:NS` for
    one over DIGEST_LIMIT; `unreadable: why` for one that cannot be read."""
    import hmac

    try:
        info = path.stat()
        if info.st_size > DIGEST_LIMIT:
            return f"{UNDIGESTED}{info.st_size}:mtime:{info.st_mtime_ns}"
        mac = hmac.new(key, digestmod=hashlib.sha256)
        with path.open("rb") as fh:
            while block := fh.read(1 << 20):
                mac.update(block)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return mac.hexdigest()[:32]
