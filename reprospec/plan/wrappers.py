"""The programs that run another one (`timeout 60 python x.py`, `nice -n 5`, `env -i`),
read by their options: where the program's own words begin.

A command's program decides what capture reads of it: its settings as axes (`--lr 0.1`),
the script it copies (`python3 x.py`), pytest's node ids and pins. Each reader looked at the
command's first word, so `timeout 60 python3 -m pytest t.py` was no pytest run, and
`timeout 5 env -i python3 x.py --lr 0.1` read `-i python3` as a setting (the axis `i`
holding the interpreter). Here each wrapper is read by its own option grammar (its getopt
string: which options take a value, which operands come before the program), one inside
another too, and `env` with its options and assignments among them.

A word a wrapper's grammar does not know (an option of a newer release, a pid mode) leaves
the program's start unknown: `wrapped` says None, and the readers take no program's words
from the command, since an option that takes a value read as a switch would make the value
the program and the program's first option's value an axis: no axis is better than a wrong
one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core.frozen import frozen
from reprospec.core.shellline import ENV_VALUE_LETTERS, ENV_VALUE_LONG

# A `NAME=value` word: before the program, a variable of its environment.
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=", re.S)
# The `env` program, by any path.
ENV_PROGRAM = re.compile(r"^(?:\S*/)?env$")


@frozen
class Operand:
    """A word a wrapper reads before the program's name (timeout's DURATION, taskset's
    mask, chrt's priority), known by its shape; `required`: the wrapper always reads one,
    so a word of another shape there is no command this grammar knows."""

    shape: str
    required: bool = True

    def fits(self, word: str) -> bool:
        return re.fullmatch(self.shape, word) is not None


@frozen
class Wrapper:
    """A program that runs another one, by its getopt grammar: its short options that take
    no value (`switch_letters`) and those that take one (`value_letters`: `-s KILL`,
    `-sKILL`), its long ones alike (a unique prefix is the option, as getopt_long reads
    it), and the operands it reads before the program. Any other option is unknown."""

    switch_letters: str = ""
    value_letters: str = ""
    switch_long: tuple[str, ...] = ("--help", "--version")
    value_long: tuple[str, ...] = ()
    operands: tuple[Operand, ...] = ()
    # nice's obsolete `-5`, `--5`, `-+5`: an adjustment given as the option itself.
    number_option: bool = False
    # Options whose value holds the program itself (env's `-S STRING`): what follows
    # them is not the program's words.
    hides_letters: str = ""
    hides_long: tuple[str, ...] = ()


_NUMBER = r"\d+(?:\.\d*)?|\.\d+"
# A mask or a list of CPUs (`0x3`, `0-3,8`, `0-15:2`).
_CPUS = r"[0-9A-Fa-fxX,:-]+"

# Each wrapper's options as its own source declares them (coreutils timeout, nice, nohup,
# stdbuf, env and time; util-linux setsid, taskset, ionice, chrt; numactl; xvfb-run). The
# modes that run no command (`taskset -p PID`, `chrt -p`, `ionice -p`) are left out, so
# such a command is unknown, not read as one whose program is a pid.
WRAPPERS: Mapping[str, Wrapper] = {
    "timeout": Wrapper(
        "fpv",
        "ks",
        ("--foreground", "--preserve-status", "--verbose", "--help", "--version"),
        ("--kill-after", "--signal"),
        (Operand(rf"(?:{_NUMBER})(?:[eE][-+]?\d+)?[smhd]?"),),
    ),
    "nice": Wrapper("", "n", value_long=("--adjustment",), number_option=True),
    "nohup": Wrapper(),
    "setsid": Wrapper("cfwhV", "", ("--ctty", "--fork", "--wait", "--help", "--version")),
    "taskset": Wrapper(
        "ac", "", ("--all-tasks", "--cpu-list", "--help", "--version"), (), (Operand(_CPUS),)
    ),
    "stdbuf": Wrapper("", "ioe", value_long=("--input", "--output", "--error")),
    "numactl": Wrapper(
        "vasldDHtuTVb",
        "wipPcNCmSfoLMI",
        (
            "--all",
            "--show",
            "--localalloc",
            "--hardware",
            "--strict",
            "--dump",
            "--dump-nodes",
            "--huge",
            "--touch",
            "--verify",
            "--balancing",
            "--version",
        ),
        (
            "--interleave",
            "--weighted-interleave",
            "--preferred",
            "--preferred-many",
            "--cpubind",
            "--cpunodebind",
            "--physcpubind",
            "--membind",
            "--shm",
            "--file",
            "--offset",
            "--length",
            "--shmmode",
            "--shmid",
        ),
    ),
    "ionice": Wrapper("thV", "cn", ("--ignore", "--help", "--version"), ("--class", "--classdata")),
    "chrt": Wrapper(
        "abdfiorRmvhV",
        "TPD",
        (
            "--all-tasks",
            "--batch",
            "--deadline",
            "--fifo",
            "--idle",
            "--other",
            "--rr",
            "--reset-on-fork",
            "--max",
            "--verbose",
            "--help",
            "--version",
        ),
        ("--sched-runtime", "--sched-period", "--sched-deadline"),
        # The priority: optional where the policy takes none (`chrt -b cmd`, util-linux 2.35+).
        (Operand(r"\d+", required=False),),
    ),
    "xvfb-run": Wrapper(
        "adhl",
        "efnpsw",
        ("--auto-display", "--auto-servernum", "--listen-tcp", "--help"),
        (
            "--error-file",
            "--auth-file",
            "--server-num",
            "--xauth-protocol",
            "--server-args",
            "--wait",
        ),
    ),
    "time": Wrapper(
        "apqvV",
        "fo",
        ("--append", "--portability", "--quiet", "--verbose", "--version", "--help"),
        ("--format", "--output"),
    ),
}

# env, read by `_env_end`: its options, then its assignments. The signal options take an
# optional value, only ever `=SIG` (a next word is never theirs).
_ENV = Wrapper(
    "iv0",
    ENV_VALUE_LETTERS.replace("S", ""),
    (
        "--ignore-environment",
        "--null",
        "--debug",
        "--block-signal",
        "--default-signal",
        "--ignore-signal",
        "--list-signal-handling",
        "--help",
        "--version",
    ),
    tuple(option for option in ENV_VALUE_LONG if option != "--split-string"),
    hides_letters="S",
    hides_long=("--split-string",),
)


@frozen
class Wrapped:
    """A command's wrappers, read: each one's words (`[begin, end)`: its name, options,
    operands; env's assignments too), and where the program's name is (`program`, the
    number of words where none follows)."""

    spans: tuple[tuple[int, int], ...]
    program: int


def is_wrapper(word: str) -> bool:
    """Whether `word` names a program read here as a wrapper (by any path): env too."""
    name = word.rsplit("/", 1)[-1]
    return name in WRAPPERS or name == "env"


def wrapped(words: Sequence[str]) -> Wrapped | None:
    """The wrappers `words` starts with, one inside another (`timeout 5 env -i nice -n 5
    python x.py`: three, the program at 6); `Wrapped((), 0)` where the first word is no
    wrapper. None where a wrapper's word is not one its grammar knows (an unknown option, a
    required operand of another shape, `env -S`, which holds the program inside one word):
    where the program starts is not sure."""
    return _read(words)[0]


def unsure_wrapper(words: Sequence[str]) -> str:
    """The wrapper whose word made `wrapped` unsure (`numactl` of `timeout 5 numactl
    --cpuset 0 python x.py`), as named; "" where it is sure."""
    return _read(words)[1]


def _read(words: Sequence[str]) -> tuple[Wrapped | None, str]:
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(words) and is_wrapper(words[index]):
        name = words[index].rsplit("/", 1)[-1]
        end = _env_end(words, index) if name == "env" else _wrapper_end(words, index, name)
        if end is None:
            return None, words[index]
        spans.append((index, end))
        index = end
    return Wrapped(tuple(spans), index), ""


def command_wrappers(argv: Sequence[str]) -> tuple[int, Wrapped] | None:
    """A command's wrappers (`wrapped`), past its leading `NAME=value` words, and where they
    begin (the number of those words); None where the program's start is not sure."""
    index = 0
    while index < len(argv) and _ASSIGNMENT.match(argv[index]):
        index += 1
    found = wrapped(argv[index:])
    return None if found is None else (index, found)


def program_file(word: str, workdir: Path) -> Path:
    """The file a program word with a `/` runs (`./train`, `~/.venv/bin/train`): from the
    workdir, a `~` expanded as the shell did. A `~user` the shell cannot expand (no such
    user, no home) stays as typed, as the shell leaves it: `Path.expanduser` raised there,
    and `capture -- '~bob/bin/train'` died with a traceback (review). The one rule capture's
    interpreter, the ticket reader's native program, a bundle's reading of a command's
    Python and script (export/scriptpython) and the workdir's files a word names
    (plan/workfiles) share."""
    return workdir / os.path.expanduser(word)  # noqa: PTH111 (Path.expanduser raises)


def program_start(argv: Sequence[str]) -> int | None:
    """Where the program's name is in a command: past its leading `NAME=value` words and
    its wrappers (`command_wrappers`); None where that is not sure."""
    read = command_wrappers(argv)
    return None if read is None else read[0] + read[1].program


def program_words(argv: Sequence[str]) -> list[str]:
    """`argv` from the program it runs, its name first: past its leading `NAME=value`
    words, `env` with its options and assignments, and wrappers (`timeout 60 nice -n 5`);
    [] where none follows them or where that is not sure (`program_start`)."""
    start = program_start(argv)
    return [] if start is None else list(argv[start:])


def _wrapper_end(words: Sequence[str], at: int, name: str) -> int | None:
    """Where the words of the wrapper at `at` end: past its options (getopt's, stopping at
    the first word that is none, or past `--`) and its operands."""
    wrapper = WRAPPERS[name]
    index = _options_end(words, at + 1, wrapper)
    if index is None:
        return None
    for operand in wrapper.operands:
        if index < len(words) and operand.fits(words[index]):
            index += 1
        elif operand.required:
            return None
    return index


def _env_end(words: Sequence[str], at: int) -> int | None:
    """Where the words of the `env` at `at` end: past its options and its assignments.
    None for `-S`/`--split-string` (the program is inside its one word), or an option env
    does not have."""
    index = _options_end(words, at + 1, _ENV, dash_alone=True)
    if index is None:
        return None
    while index < len(words) and _ASSIGNMENT.match(words[index]):
        index += 1
    return index


def _options_end(
    words: Sequence[str], index: int, wrapper: Wrapper, *, dash_alone: bool = False
) -> int | None:
    """Past the options from `index` on, read by `wrapper`'s grammar (getopt's: the first
    word that is no option ends them, `--` too, after it); None at an option it lacks.
    `dash_alone`: a lone `-` is an option (env's, `-i`)."""
    while index < len(words):
        word = words[index]
        if word == "--":
            return index + 1
        if word == "-" and dash_alone:
            index += 1
            continue
        if not word.startswith("-") or word == "-":
            return index
        if wrapper.number_option and re.fullmatch(r"-[-+]?\d+", word):
            index += 1
            continue
        if word.startswith("--"):
            name, equals, _ = word.partition("=")
            known = (*wrapper.switch_long, *wrapper.value_long, *wrapper.hides_long)
            matches = [o for o in known if o == name] or [o for o in known if o.startswith(name)]
            if len(matches) != 1 or matches[0] in wrapper.hides_long:
                return None  # unknown, or a prefix of several: getopt_long refuses it
            takes = matches[0] in wrapper.value_long
            index += 2 if takes and not equals else 1
            continue
        taken = 1
        for at, letter in enumerate(word[1:], 1):
            if letter in wrapper.hides_letters:
                return None
            if letter in wrapper.value_letters:
                # `-s KILL` takes the next word; `-sKILL`, `-oL` hold their value.
                taken = 2 if at == len(word) - 1 else 1
                break
            if letter not in wrapper.switch_letters:
                return None
        index += taken
    return index
