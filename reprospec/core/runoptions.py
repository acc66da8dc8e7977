"""What a run is asked beyond the spec itself: the options of `reprospec run`, as one value.

The CLI builds a `RunOptions` from its arguments and the Python API takes one
directly, so both drive the engine the same way. The store keeps `to_dict()`
so `--resume` runs again with exactly the options the run started with.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field, fields, replace
from numbers import Integral, Real
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Iterator, KeysView, MutableSequence, ValuesView
    from collections.abc import Set as AbstractSet

from reprospec.core.bounds import MAX_PARALLEL, MAX_REPEAT
from reprospec.core.caller import made
from reprospec.core.formats import SEARCH_VERBS
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject
from reprospec.core.lazyre import Lazy
from reprospec.core.safepoint import Deferral
from reprospec.core.units import format_duration, parse_duration
from reprospec.errors import UsageError

# What an options class's constructor takes where its field keeps one type: a path as a str
# or a Path (kept as a Path), strings as any iterable of them (kept as a tuple; `Words`:
# where their order counts, `--set`'s, one set is refused: it has none; `WordSet`: where it
# does not, `-m`'s, a set too, sorted). Each class says so in a constructor written for type
# checkers (`if TYPE_CHECKING:`), where mypy --strict refused `RunOptions(out=".repro")`
# and `cell=["w=2"]`, which every class has taken and documented;
# tests/unit/core/test_runoptions_init.py holds its parameters to the fields.
PathArg: TypeAlias = "str | PathLike[str]"
# Not Iterable[str] nor Sequence[str]: a str is both, and would be read a letter at a time.
Words: TypeAlias = (
    "tuple[str, ...] | MutableSequence[str] | Iterator[str] | KeysView[str] | ValuesView[str]"
)
WordSet: TypeAlias = "Words | AbstractSet[str]"

STOP_ON = ("never", "first-reproduction", "first-miss")
# The runners `--runner` offers, by name: the registry (runners/__init__.py RUNNERS) builds
# each, and a unit test holds the two equal. Named here, in core, so that a bad name from the
# Python API is refused when the options are made, as the CLI refuses it when it parses.
RUNNER_NAMES = ("local", "docker", "venv")
# The results store a run goes to where no `--out` is given (the CLI's default too).
DEFAULT_OUT = Path(".reprospec")

# What CUDA_VISIBLE_DEVICES accepts: an index, or a GPU/MIG UUID.
_GPU_ID = Lazy(r"^(\d+|(GPU|MIG)-[0-9A-Za-z/-]+)$")


def parse_gpu_list(text: str) -> tuple[str, ...]:
    """`"0,1,3"` -> ("0", "1", "3"); blanks dropped; "" or "none" -> ()."""
    if text.strip().lower() in ("", "none", "-1"):
        return ()
    return tuple(part.strip() for part in text.split(",") if part.strip())


def slots_said(visible_devices: str) -> str:
    """A set CUDA_VISIBLE_DEVICES as the run (pipeline/machinegpus.py) and every doctor
    check say it: `CUDA_VISIBLE_DEVICES=0,1`, or
    quoted where it names no GPU (`CUDA_VISIBLE_DEVICES=''`, `CUDA_VISIBLE_DEVICES='-1'`):
    the device check said `(CUDA_VISIBLE_DEVICES=)`, a cut-off line beside the gpu-slots
    check's `CUDA_VISIBLE_DEVICES='' names no GPU`."""
    if parse_gpu_list(visible_devices):
        return f"CUDA_VISIBLE_DEVICES={visible_devices}"
    return f"CUDA_VISIBLE_DEVICES={visible_devices!r}"


def gpu_ids(text: str) -> tuple[str, ...]:
    """`--gpus`' ids (`gpus`' to the Python API); a UsageError for one that is no GPU id.
    Whether this machine has them is the run's to check (pipeline/gpus.py)."""
    slots = parse_gpu_list(text)
    bad = [slot for slot in slots if not _GPU_ID.match(slot)]
    if bad:
        raise UsageError(
            f"{made('--gpus', 'gpus')} {text}: {bad[0]!r} is not a GPU id "
            "(expected indexes like 0,1,3 or UUIDs like GPU-8f3c...)"
        )
    return slots


def typed_as(word: str, option: str) -> bool:
    """Whether `word`, of a command line argparse read (`reprospec run`'s), is `option`:
    whole, or cut as argparse takes it (allow_abbrev: `--shar 1/2` ran as `--shard 1/2`).
    Where argparse took a cut it named one option alone (`--s`, `--set` or `--shard`, it
    refuses), so a word longer than `--` that begins `option` is it. Read so by merge
    (`--shard`, `-j`, `-m` of the runs it merges), the redactor (a `--set`'s secret) and the
    command line a run records (`without_options`)."""
    return word == option or (len(word) > 2 and word.startswith("--") and option.startswith(word))


def without_options(
    words: Sequence[str],
    options: Sequence[str],
    flags: Sequence[str] = (),
    *,
    cut: bool = False,
) -> list[str]:
    """`words` less each of `options` with its value (`--out DIR`, `--out=DIR`) and each of
    `flags`: the command line a run records (`command_line`), made to be shown to others,
    keeps no option that only says where this machine keeps things (`reprospec run`'s, the
    pytest plugin's). `cut`: `words` were read by argparse with its abbreviations (`reprospec
    run`'s; pytest takes none), so `--ou DIR` is `--out DIR`: it was kept, this machine's
    folder in How to reproduce (`typed_as`)."""

    def named(name: str, among: Sequence[str]) -> bool:
        return name in among or (cut and any(typed_as(name, option) for option in among))

    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if named(name, flags):
            continue
        if named(name, options):
            skip = "=" not in word
            continue
        kept.append(word)
    return kept


def absolute_python(text: str) -> str:
    """`--python`'s value as a run records it: a path made absolute against this folder
    (its links kept: a venv's python is one), a name PATH finds (`python3.11`) as it is.
    `--resume` pasted in another folder read `../env/bin/python` against that one."""
    if os.sep not in text and not text.startswith("~"):
        return text
    return os.path.abspath(os.path.expanduser(text))  # noqa: PTH100, PTH111


def docker_python_refused(flag: str, value: str, then: str) -> UsageError:
    """`--python VALUE` (or `flag`, as the caller named it) with the docker runner, refused in
    one set of words by `run`, `doctor` and the pytest plugin, which each end it with what
    to do instead (`then`): the runner runs each cell in its image's python3."""
    return UsageError(
        f"{flag} {value}: the docker runner runs each cell in its image's python3, not an "
        "interpreter of this machine; name the image with environment.image (or "
        f"environment.dockerfile), or {then}"
    )


def absolute_folder(path: Path) -> Path:
    """`--find-links`' folder as a run records it: absolute, for `--resume` alike."""
    return path.expanduser().resolve()


def refuse_file_on_path(path: Path, shown: str) -> None:
    """Refuse a folder to be made, `path`, that is a file or has a file on its path, as the
    user's mistake (exit 2) named as they gave it (`shown`: `--out OUT`,
    `REPROSPEC_ENVS=DIR`): making a folder under it failed later as `Not a directory:
    PATH/.locks`, naming neither the option nor the variable."""
    for each in (path, *path.parents):
        if each.exists() and not each.is_dir():
            where = "a file is there" if each == path else f"{each} on its path is a file"
            raise UsageError(f"{shown}: not a folder ({where}); give a folder")


def rerun_words(options: RunOptions) -> tuple[str, ...]:
    """The options a search ran its attempts with, as the words that give them to another
    verb on this machine (`--runner venv`, `--python PATH`, `--out DIR`, ...): the next
    command a search's report suggests (`reprospec run amplified.yaml ...`). Without them,
    a spec captured with `--python .venv/bin/python` was suggested a bare `reprospec run`,
    an infra-error (its packages missing from reprospec's own interpreter). `-j N` where
    given: the next verb ran its attempts one at a time, twice as long at `-j 2`."""
    words: list[str] = []
    if options.runner != "local":
        words += ["--runner", options.runner]
    if options.python is not None:
        words += ["--python", options.python]
    if options.timeout_s is not None:
        words += ["--timeout", format_duration(options.timeout_s)]
    if options.gpus is not None:
        words += ["--gpus", options.gpus]
    if options.find_links is not None:
        words += ["--find-links", str(options.find_links)]
    if options.keep_cores:
        words.append("--keep-cores")
    if options.preload is not None:
        words += ["--preload", ",".join(options.preload) or "none"]
    if options.out != Path(".reprospec"):
        words += ["--out", str(options.out)]
    if options.jobs is not None:
        words += ["-j", str(options.jobs)]
    return tuple(words)


@frozen
class Shard:
    """Shard `index` of `count` (1-based): every count-th attempt, starting at the index-th."""

    index: int
    count: int

    def __post_init__(self) -> None:
        # Checked here, not only in `parse`: the Python API builds Shard(K, N) itself, and
        # Shard(0, N) would select no attempt yet run, store and exit 0 as if all passed.
        # Named as the caller gave it: `shard` to the Python API's (RunOptions(shard=...)).
        shard = f"{made('--shard', 'shard')} {self}"
        if self.count < 1:
            raise UsageError(f"{shard}: N, the number of shards, must be at least 1")
        if not 1 <= self.index <= self.count:
            raise UsageError(f"{shard}: K must be between 1 and N")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`"2/8"` -> Shard(2, 8); a usage error otherwise."""
        try:
            k_text, n_text = text.split("/")
            k, n = int(k_text), int(n_text)
        except ValueError:
            raise UsageError(
                f"{made('--shard', 'shard')} expects K/N like 2/8, got {text!r}"
            ) from None
        return cls(k, n)


# The purposes of the runs a search makes, one per probe (isolate, minimize, amplify and
# bisect run tens to thousands): `history` and `latest` leave them out unless asked, so the
# runs a person started are not lost among them. Each is its search's verb.
SEARCH_PURPOSES = SEARCH_VERBS


@frozen
class RunOptions:
    """Everything a run is asked besides the spec; the defaults are `reprospec run SPEC`'s.

    `repeat`, `timeout_s`, `jobs` and `stop_on` override the spec's `run` section
    for this run only. `purpose` says who started the run ("run", "isolate",
    "bisect", "pytest", ...); it is stored with the run and shown by `history`.
    """

    runner: str = "local"
    jobs: int | None = None
    repeat: int | None = None
    timeout_s: float | None = None
    stop_on: str | None = None
    matrix_filters: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    out: Path = DEFAULT_OUT
    python: str | None = None
    gpus: str | None = None
    shard: Shard | None = None
    find_links: Path | None = None
    purpose: str = "run"
    # Keep the core files of crashed processes in their attempt folders (eu-stack or gdb read
    # them; by default each is deleted once read).
    keep_cores: bool = False
    # Observe mode (`run --observe`): ignore `expect`, record what happens, judge nothing.
    observe: bool = False
    # Modules to preload in a fork server (`--preload`), replacing the spec's run.preload;
    # None: the spec's; (): none.
    preload: tuple[str, ...] | None = None
    # The number of each cell's first attempt (then first_attempt + 1, ...). 1 for a run a
    # person started; a search's probe is numbered after the attempts the search already ran
    # of that configuration, so that a `${{ attempt }}` seed and a workload fault's
    # `probability` coin (seeded by the attempt number) draw new values in every probe, where
    # each probe numbered from 1 drew the first few again and counted them as new samples.
    first_attempt: int = 1
    # A folder of this host the attempts read at its own path and never write: a minimize
    # candidate's folder holds symlinks to the original workdir's other files, which the
    # docker runner's container (the candidate's folder its workdir mount) could not follow;
    # it mounts this folder read-only at its own path, so they resolve and a write through
    # one fails (EROFS). The local and venv runners' attempts run on this host: it is there.
    read_only: Path | None = None
    # How a person reruns this (shown under "How to reproduce"); empty: derived from the spec.
    command_line: str = field(default="", compare=False)
    # A search's probe, in words: what this run of it tried (bisect: `pyyaml 5.4.1`; isolate:
    # the differences it applied), which `history --searches` shows beside the search's name;
    # "" for a run a person started. Kept by the store only: it changes nothing that runs.
    probe: str = field(default="", compare=False)
    # Where the runner's own lines go while it prepares (a venv's or an image's build:
    # `env 3f2a...: installing numpy torch`), each without `reprospec: `; None: printed on
    # stderr, as `reprospec run` prints them. The Python API's searches give it their
    # `progress` (or nothing). Not stored: it changes nothing that runs.
    say: Callable[[str], None] | None = field(default=None, compare=False, repr=False)
    # How the CLI's stop handler (commands/interrupt.py) reaches the run once it is stored
    # (core/safepoint.py): begun there, a stop is the run's `cancel` alone, so what ran is
    # written whole. `run`, `capture` and the search verbs give it, the searches
    # in the options their probes' runs are made from, so that each probe's run has it
    # (bisect in each candidate's); None: a stop is raised where it lands, as a Python
    # caller's Ctrl-C is. Not stored: it changes nothing that runs.
    deferral: Deferral | None = field(default=None, compare=False, repr=False)

    if TYPE_CHECKING:

        def __init__(
            self,
            runner: str = ...,
            jobs: int | None = ...,
            repeat: int | None = ...,
            timeout_s: float | None = ...,
            stop_on: str | None = ...,
            matrix_filters: WordSet = ...,
            overrides: Words = ...,
            out: PathArg = ...,
            python: PathArg | None = ...,
            gpus: str | None = ...,
            shard: Shard | str | None = ...,
            find_links: PathArg | None = ...,
            purpose: str = ...,
            keep_cores: bool = ...,
            observe: bool = ...,
            preload: Words | None = ...,
            first_attempt: int = ...,
            read_only: PathArg | None = ...,
            command_line: str = ...,
            probe: str = ...,
            say: Callable[[str], None] | None = ...,
            deferral: Deferral | None = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        # `RunOptions(out=".repro")` from Python: the rest of the engine takes `out` as a Path
        # (`.resolve()`, `/`), and load_spec/load_result take a str there too.
        # Anything else is refused here: `out=3` was kept and raised AttributeError from the
        # run's first `.resolve()`, `python=3` a TypeError in the runner.
        given_read_only = self.read_only
        for name in ("out", "find_links", "read_only"):
            value = optional_path(name, getattr(self, name))
            if value is None and name == "out":
                raise UsageError("out takes a path, got None")
            object.__setattr__(self, name, value)
        if self.read_only is not None:
            object.__setattr__(self, "read_only", _check_read_only(self.read_only, given_read_only))
        # And `python=Path(...)`: the runners take the interpreter as a str, a str as given
        # (`./py` is no name to look up on PATH, which Path("./py"), `py`, would be).
        if isinstance(self.python, PathLike):
            object.__setattr__(self, "python", os.fspath(self.python))
        elif self.python is not None and not isinstance(self.python, str):
            raise UsageError(f"python takes a path, got {self.python!r}")
        # A flag is a bool: `observe="no"` is true, and the run ignored every cell's expect.
        for name in ("keep_cores", "observe"):
            if not isinstance(getattr(self, name), bool):
                raise UsageError(f"{name} takes True or False, got {getattr(self, name)!r}")
        for name in ("purpose", "command_line", "probe"):
            if not isinstance(getattr(self, name), str):
                raise UsageError(f"{name} takes a string, got {getattr(self, name)!r}")
        if self.runner not in RUNNER_NAMES:
            names = ", ".join(repr(name) for name in RUNNER_NAMES)
            raise UsageError(f"unknown runner {self.runner!r}: expected one of {names}")
        if self.runner == "docker" and self.python is not None:
            # The docker runner runs each cell in its image's python3: an interpreter of this
            # machine was dropped without a word, and the report called it "the interpreter
            # this run's attempts ran in" and put it in the command to rerun.
            raise docker_python_refused(
                made("--python", "python"), self.python, "run with --runner local or venv"
            )
        # `matrix_filters="w=2"` would be read a character at a time ("-m w: expected
        # AXIS=VALUE"); a list is kept as the tuple the frozen value needs.
        for name in ("matrix_filters", "overrides", "preload"):
            value = getattr(self, name)
            if value is None and name == "preload":
                continue  # the spec's run.preload
            ordered = name != "matrix_filters"  # -m's filters are one set of them
            object.__setattr__(self, name, string_sequence(name, value, ordered=ordered))
        # A shard as `--shard` writes it, "2/8", is read as the CLI reads it; any other value
        # would fail in plan_run ("unsupported operand type(s) for -").
        if isinstance(self.shard, str):
            object.__setattr__(self, "shard", Shard.parse(self.shard))
        elif self.shard is not None and not isinstance(self.shard, Shard):
            raise UsageError(f"shard takes Shard(K, N) or 'K/N', got {self.shard!r}")
        if self.say is not None and not callable(self.say):
            raise UsageError(f"say takes a function of one str, got {self.say!r}")
        if self.deferral is not None and not isinstance(self.deferral, Deferral):
            raise UsageError(f"deferral takes a safepoint.Deferral, got {self.deferral!r}")
        if self.gpus is not None and not isinstance(self.gpus, str):
            raise UsageError(f"gpus takes a string of GPU indices like '0,1', got {self.gpus!r}")
        if self.gpus is not None:
            # Here, not only as the run hands out GPUs: `plan_run(gpus="a,b")` planned what
            # `run` with the same options refused.
            gpu_ids(self.gpus)
        # A number of the wrong type would raise a TypeError of Python's below or in the
        # scheduler (`repeat="3"`: "'<' not supported between 'str' and 'int'"), or plan a
        # run no CLI can ask for (`repeat=2.5`, `timeout_s=True`); refused as the CLI's are.
        # Any integer or real type is taken (numpy's, from a config) and kept as int or
        # float: the store writes the options as JSON, which has no numpy.int64.
        for name in ("jobs", "repeat", "first_attempt"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, Integral):
                raise UsageError(f"{name} takes a whole number, got {value!r}")
            object.__setattr__(self, name, int(value))
        timeout = self.timeout_s
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, Real):
                raise UsageError(
                    f"timeout_s takes seconds as a number (300.0, not '5m'), got {timeout!r}"
                )
            object.__setattr__(self, "timeout_s", float(timeout))
        # The bounds `-j` and `--repeat` have (docs/limits.md), for the API's callers too:
        # repeat=10**6 would otherwise plan a million attempts per cell.
        for name, most in (("jobs", MAX_PARALLEL), ("repeat", MAX_REPEAT)):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"{name} must be >= 1, got {value}")
            if value is not None and value > most:
                raise UsageError(f"{name} must be at most {most}, got {value} (docs/limits.md)")
        if self.first_attempt < 1:
            raise UsageError(f"first_attempt must be >= 1, got {self.first_attempt}")
        if self.timeout_s is not None and not 0 < self.timeout_s < math.inf:
            # inf passed where nan did not: the CLI's --timeout refuses both.
            raise UsageError(f"timeout_s must be > 0 seconds, and finite, got {self.timeout_s}")
        if self.stop_on is not None and self.stop_on not in STOP_ON:
            raise UsageError(f"stop_on must be one of {', '.join(STOP_ON)}, got {self.stop_on!r}")
        for name in self.preload or ():
            if not name or not all(part.isidentifier() for part in name.split(".")):
                raise UsageError(f"{made('--preload', 'preload')}: {name!r} is not a module name")

    @property
    def cache_dir(self) -> Path:
        """Where runs in `out` keep what they can reuse (the environment capture's torch part)."""
        return self.out.resolve() / "cache"

    def to_dict(self) -> JsonObject:
        """The stored form (`--resume` rebuilds the options from it)."""
        return {
            "runner": self.runner,
            "jobs": self.jobs,
            "repeat": self.repeat,
            "timeout": format_duration(self.timeout_s) if self.timeout_s is not None else None,
            "stop_on": self.stop_on,
            "matrix_filters": list(self.matrix_filters),
            "overrides": list(self.overrides),
            "python": self.python,
            "gpus": self.gpus,
            "shard": [self.shard.index, self.shard.count] if self.shard else None,
            "find_links": str(self.find_links) if self.find_links else None,
            "purpose": self.purpose,
            "keep_cores": self.keep_cores,
            "observe": self.observe,
            "preload": list(self.preload) if self.preload is not None else None,
            # Only where it is not 1 (a search's probe): a run's stored options are as before.
            **({"first_attempt": self.first_attempt} if self.first_attempt != 1 else {}),
            **({"read_only": str(self.read_only)} if self.read_only is not None else {}),
        }

    def stored(self) -> JsonObject:
        """What the store keeps: `to_dict()` with the command line, which results.json's
        options leave out (compare diffs it on its own), so that a resumed run's report and
        results.json still say how the run was started."""
        probe = {"probe": self.probe} if self.probe else {}
        return {**self.to_dict(), "command_line": self.command_line, **probe}

    @classmethod
    def from_dict(cls, data: Mapping[str, object], out: Path) -> RunOptions:
        """Inverse of `to_dict` (also reads what older versions stored)."""
        shard = data.get("shard")
        find_links = data.get("find_links")
        timeout = data.get("timeout")
        runner = str(data.get("runner") or "local")
        options = cls(
            runner=runner,
            jobs=_int_or_none(data.get("jobs")),
            repeat=_int_or_none(data.get("repeat")),
            timeout_s=parse_duration(timeout) if isinstance(timeout, (str, int, float)) else None,
            stop_on=str(data["stop_on"]) if data.get("stop_on") else None,
            matrix_filters=tuple(str(f) for f in _list(data.get("matrix_filters"))),
            overrides=tuple(str(o) for o in _list(data.get("overrides"))),
            out=out,
            # A docker run stored before `--python` was refused there had it unused: its
            # cells ran in the image's python3 (and the options would not be made again).
            python=str(data["python"]) if data.get("python") and runner != "docker" else None,
            gpus=str(data["gpus"]) if data.get("gpus") else None,
            shard=Shard(*(int(str(x)) for x in _list(shard))) if shard else None,
            find_links=Path(str(find_links)) if find_links else None,
            purpose=str(data.get("purpose") or "run"),
            keep_cores=bool(data.get("keep_cores", False)),
            observe=bool(data.get("observe", False)),
            preload=tuple(str(m) for m in _list(data["preload"]))
            if data.get("preload") is not None
            else None,
            first_attempt=_int_or_none(data.get("first_attempt")) or 1,
            # Kept by the store (`stored`), not by results.json's options.
            command_line=str(data.get("command_line") or ""),
            probe=str(data.get("probe") or ""),
        )
        folder = data.get("read_only")
        return _with_read_only(options, folder_as_mounted(Path(str(folder))) if folder else None)

    def with_changes(self, **changes: object) -> RunOptions:
        """A copy with some options changed (`dataclasses.replace`, typed for callers); a
        name no option has is a UsageError naming the options, as any bad option is, where
        it was dataclasses' TypeError."""
        unknown = sorted(set(changes) - {f.name for f in fields(self)})
        if unknown:
            known = ", ".join(f.name for f in fields(self))
            raise UsageError(f"RunOptions has no option {', '.join(unknown)} (it has {known})")
        if "read_only" in changes:
            return replace(self, **changes)  # type: ignore[arg-type]
        # A folder these options hold already is not checked again (`_with_read_only`).
        changed = replace(self, read_only=None, **changes)  # type: ignore[arg-type]
        return _with_read_only(changed, self.read_only)


def _int_or_none(value: object) -> int | None:
    return int(str(value)) if value is not None else None


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else []


def string_sequence(name: str, value: object, *, ordered: bool = True) -> tuple[str, ...]:
    """`value` as the tuple of strings an option `name` takes (`--set`, `-m`): any iterable
    of str (a list, a generator, a dict's keys). One str (or bytes) is refused, as it would
    be read a character at a time ("--set r: expected PATH=VALUE"), and so is a mapping
    (its keys alone), an item that is no str, and, where the order counts (`ordered`: the
    overrides are applied in turn), a set, which has none; elsewhere a set is sorted, so
    the same options make the same search's id (a set's order is its process's)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        shown = f"a {type(value).__name__}" if isinstance(value, Mapping) else repr(value)
        raise UsageError(
            f"{name} takes a sequence of strings, got {shown}: a list, or any iterable of str"
        )
    unordered = isinstance(value, (set, frozenset))
    if unordered and ordered:
        raise UsageError(
            f"{name} is applied in order, which a set has not: give a list or a tuple, "
            f"got {value!r}"
        )
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise UsageError(f"{name} takes strings, got {item!r} among them")
    return tuple(sorted(items)) if unordered else items


def string_set(name: str, value: object) -> tuple[str, ...]:
    """`string_sequence` where the order does not count (`-m`'s filters): a set taken."""
    return string_sequence(name, value, ordered=False)


def whole_number(name: str, value: object, least: int = 1) -> int:
    """`value` as the whole number >= `least` an option `name` takes (`budget`): a str, a
    float or a bool is refused, any integer type kept as int (numpy's, from a config)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise UsageError(f"{name} takes a whole number, got {value!r}")
    if value < least:
        raise UsageError(f"{name} must be >= {least}, got {value}")
    return int(value)


def fraction(name: str, value: object) -> float | None:
    """`value` as a search's probability (`--error`, `--min-rate`): None (the default), or a
    number strictly between 0 and 1, kept as float."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        raise UsageError(f"{name} takes a probability as a number, got {value!r}")
    number = float(value)
    if not 0 < number < 1:
        raise UsageError(f"{name} must be strictly between 0 and 1, got {number:g}")
    return number


def optional_text(name: str, value: object) -> str | None:
    """`value` as the one string (or None) an option `name` takes (a cell, a package)."""
    if value is not None and not isinstance(value, str):
        raise UsageError(f"{name} takes a string, got {value!r}")
    return value


def optional_path(name: str, value: object) -> Path | None:
    """`value` as the path (or None) an option `name` takes; a str is made a Path."""
    if value is None or isinstance(value, Path):
        return value
    if isinstance(value, (str, PathLike)):
        return Path(value)
    raise UsageError(f"{name} takes a path, got {value!r}")


def _check_read_only(path: Path, given: object) -> Path:
    """`read_only` is a folder the docker runner mounts at its own path in every attempt's
    container: anything else failed there, one infra-error per attempt (a missing folder,
    `/`, which the engine refuses), and a relative path, read against the folder each
    run started in, was stored relative, so that `--resume` from another folder mounted
    another (`""` was `.` too). Refused when a caller makes the options: exit 2. Returned
    normalised (`os.path.normpath`: `a/..` and `//` folded, links kept, as the mount and
    the links that name it need): compared as text, `/tmp/rvwd/a/../../../tmp` was no
    `/tmp` to the docker runner's `read_only_clash`, which mounted the host's /tmp."""
    if not path.is_absolute():  # Path("") is ".": relative too
        raise UsageError(f"read_only: {given!r} is not an absolute path; give a folder's")
    path = folder_as_mounted(path)
    if path == Path("/"):
        raise UsageError("read_only: '/' is the whole file system; give a folder below it")
    if not path.is_dir():
        what = "not a folder" if path.exists() else "no such folder"
        raise UsageError(f"read_only: {path}: {what}; give an existing folder")
    return path


def folder_as_mounted(path: Path) -> Path:
    """`path` absolute with `a/..`, `.` and repeated slashes folded (`os.path.normpath`;
    POSIX leaves a leading `//` to the system, one `/` on Linux), links kept: the text a
    read-only folder is compared (`read_only_clash`), stored and mounted by, as the links
    into it name it."""
    text = os.path.normpath(path.absolute())
    return Path("/" + text.lstrip("/"))


def _with_read_only(options: RunOptions, folder: Path | None) -> RunOptions:
    """`options` holding `folder` as its `read_only`, unchecked: a stored run's folder
    (`from_dict`) or one the options held already (`with_changes`) was checked when a
    caller gave it, and may since be gone; `bundle`, which only reads the stored run,
    and a local run's `--resume` (its attempts never read it) were refused 'no such
    folder; give an existing folder', a folder the user never gave. A docker run's
    `--resume`, whose containers mount it, refuses on its own terms (pipeline/resume)."""
    object.__setattr__(options, "read_only", folder)
    return options


def run_options(name: str, value: object) -> RunOptions:
    """`value` when it is the `RunOptions` an option `name` holds (a search's `run`)."""
    if not isinstance(value, RunOptions):
        raise UsageError(f"{name} takes a reprospec.RunOptions, got {type(value).__name__}")
    return value


def check_options(
    value: object,
    *,
    sequences: Sequence[str] = (),
    sets: Sequence[str] = (),
    counts: Sequence[str] = (),
    fractions: Sequence[str] = (),
    texts: Sequence[str] = (),
    paths: Sequence[str] = (),
    runs: Sequence[str] = (),
) -> None:
    """Check the named fields of a frozen options value (isolate's, minimize's, amplify's,
    bisect's) when it is made, as `RunOptions` checks its own, and keep each as the engine
    reads it (a list as a tuple, a str path as a Path): from Python, `budget="50"` failed
    deep in the search with a TypeError, and `cell="w=2"` was read a character at a time."""
    checks: tuple[tuple[Callable[[str, object], object], Sequence[str]], ...] = (
        (string_sequence, sequences),
        (string_set, sets),
        (whole_number, counts),
        (fraction, fractions),
        (optional_text, texts),
        (optional_path, paths),
        (run_options, runs),
    )
    for check, names in checks:
        for name in names:
            object.__setattr__(value, name, check(name, getattr(value, name)))
