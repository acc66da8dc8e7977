"""The isolate folder: what an isolation ran so far, so an interrupted one resumes.

    OUT/isolate/ID/
      state.json     every probe that ran: its candidate's configuration, what its
                     attempts did, the run that holds them (rewritten after each probe)
      isolate.json   the answer and its evidence (written at the end)
      isolate.md     the report section

ID is the spec's name and a hash of what a probe's outcome depends on (the spec's
text and program, both configurations, the expect, the runner, the timeout and the
interpreter: `search_id`, which amplify's and minimize's folders are keyed by too),
not of the search's settings: running the same `reprospec isolate`
again finds the same folder, replays the stored probes in order (the search is
deterministic, so it asks for exactly the same ones) and runs only what is new.
With a larger `--budget` it asks for the same probes until the smaller budget ran
out, and goes on from there: the budget is a stop, not part of the question. A
probe asked for fewer attempts than were stored (a smaller budget's last round)
replays that many, and the rest answer its next probe of the same configuration.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from reprospec.core.atomicfile import unwritable, write_atomic
from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue, integer
from reprospec.core.trylock import search_held
from reprospec.core.words import plural
from reprospec.errors import UsageError
from reprospec.export.tree import program_digest
from reprospec.isolation.candidates import ATTEMPT_KINDS, AttemptKind

if TYPE_CHECKING:
    from reprospec.core.inputs import AttemptPlan, Spec
    from reprospec.core.runoptions import RunOptions

# A state file holds one line per probe: far below this.
MAX_STATE_BYTES = 64 << 20

FORMAT = 1
_KINDS: dict[str, AttemptKind] = {kind: kind for kind in ATTEMPT_KINDS}


@frozen
class StoredProbe:
    """One probe as it ran: the configuration's key, its attempts, the run that holds them."""

    key: str
    candidate: tuple[int, ...]
    role: str
    kinds: tuple[AttemptKind, ...]
    run_id: str
    infra_reason: str = ""
    interrupted: bool = False
    # The exception types each attempt printed, beside `kinds` (minimize's point 7); ()
    # where not read (isolate's, amplify's, bisect's, a state stored before it was, and
    # one whose runs were gone when minimize read it again, stamped `raised_from` as read).
    raised: tuple[tuple[str, ...], ...] = ()
    # Which logs `raised` was read from, by the reader's rule (minimize.probes.RAISED_FROM);
    # "" in a state an earlier version stored, which did not say (it read stderr alone, or
    # stdout too: unknown): the reader reads those again rather than compare them as they
    # are with what it reads now.
    raised_from: str = ""
    # The number of its first attempt (the rest follow): a configuration's probes are
    # numbered after its earlier ones' (`StateFile.first_attempt`), so that each draws new
    # values of a cell that reads its attempt number. 1 in a state stored before they were,
    # whose probes all began at 1.
    first_attempt: int = 1
    # The number of each attempt of `kinds`, where they are not first_attempt and the ones
    # after it: a run stopped by Ctrl-C keeps the attempts that ended before the stop, and
    # one that ended after it is set aside (attempts 5 and 7 kept, 6 not). Counted as 5
    # and 6, the probe's next attempt was numbered 7 and drew 7's values again. () where
    # they are (and in a state stored before this was): given contiguous, they are dropped
    # here, the one place that decides it (the driver gives them always).
    numbers: tuple[int, ...] = ()
    # Where each attempt that hung sat (minimize/hangplace.py), beside `kinds`: "" where
    # not read (not a hang, no stacks); () where none were (isolate's, amplify's, bisect's,
    # a probe that never hung: stored as none).
    places: tuple[str, ...] = ()
    # By which rule `places` was read (minimize.probes.PLACES_FROM), as `raised_from`: ""
    # in a state stored before it was, which minimize reads again, once: a probe whose runs
    # are gone is stamped too, its places none.
    places_from: str = ""

    def __post_init__(self) -> None:
        first = self.first_attempt
        if self.numbers == tuple(range(first, first + len(self.numbers))):
            object.__setattr__(self, "numbers", ())

    @property
    def last_attempt(self) -> int:
        """The highest attempt number this probe drew (first_attempt - 1 where none ran)."""
        if self.numbers:
            return max(self.numbers)
        return self.first_attempt + len(self.kinds) - 1

    def to_dict(self) -> JsonObject:
        numbers: list[JsonValue] = list(self.numbers)
        return {
            "key": self.key,
            "first_attempt": self.first_attempt,
            **({"numbers": numbers} if numbers else {}),
            "candidate": list(self.candidate),
            "role": self.role,
            "kinds": list(self.kinds),
            "run_id": self.run_id,
            "infra_reason": self.infra_reason,
            "interrupted": self.interrupted,
            **({"raised": [list(names) for names in self.raised]} if self.raised else {}),
            **({"raised_from": self.raised_from} if self.raised_from else {}),
            **({"places": list(self.places)} if any(self.places) else {}),
            **({"places_from": self.places_from} if self.places_from else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> StoredProbe:
        kinds = stored_kinds(data)
        # One a kind, or none (a hand-edited line's stray list is unread, not shifted).
        places = tuple(str(place) for place in _items(data, "places"))
        return cls(
            key=str(data["key"]),
            candidate=tuple(
                int(i) for i in _items(data, "candidate") if isinstance(i, (int, float, str))
            ),
            role=str(data.get("role", "search")),
            kinds=kinds,
            run_id=str(data.get("run_id", "")),
            infra_reason=str(data.get("infra_reason", "")),
            interrupted=bool(data.get("interrupted", False)),
            raised=tuple(
                tuple(str(name) for name in names)
                for names in _items(data, "raised")
                if isinstance(names, list)
            ),
            raised_from=str(data.get("raised_from") or ""),
            first_attempt=stored_first_attempt(data),
            numbers=stored_numbers(data, len(kinds)),
            places=places if len(places) == len(kinds) else (),
            places_from=str(data.get("places_from") or ""),
        )


def stored_numbers(data: Mapping[str, JsonValue], count: int) -> tuple[int, ...]:
    """A stored probe's attempt numbers where they are not contiguous (() where the state
    does not say: they are). One per kind, each a whole number >= 1, or ValueError."""
    value = data.get("numbers")
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) != count:
        raise ValueError("a probe's attempt numbers do not match its kinds")
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in value):
        raise ValueError(f"a probe's attempt numbers are {value!r}, not whole numbers >= 1")
    return tuple(int(n) for n in value if isinstance(n, int))


def stored_first_attempt(data: Mapping[str, JsonValue]) -> int:
    """A stored probe's first attempt number: 1 where a state stored before probes were
    numbered after each other's does not say (all of its probes began at 1)."""
    value = data.get("first_attempt", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"a probe's first attempt number is {value!r}, not a whole number >= 1")
    return value


def stored_kinds(data: Mapping[str, JsonValue]) -> tuple[AttemptKind, ...]:
    """What each stored attempt of a probe did. A kind this version does not know (a damaged
    file, or a later version's) raises ValueError, which `read_probes` refuses as damaged:
    dropped, the probe replayed fewer attempts than it ran, and the search asked again
    for some that had run, read the rest in another order and could answer otherwise."""
    kinds = data.get("kinds")
    if not isinstance(kinds, list):
        raise ValueError("a probe without its list of kinds")
    unknown = [k for k in kinds if not (isinstance(k, str) and k in _KINDS)]
    if unknown:
        raise ValueError(f"a probe's attempt of an unknown kind ({unknown[0]!r})")
    return tuple(_KINDS[str(k)] for k in kinds)


def _items(data: Mapping[str, JsonValue], name: str) -> list[JsonValue]:
    value = data.get(name)
    return value if isinstance(value, list) else []


def isolation_id(name: str, parts: Sequence[str]) -> str:
    """`NAME-HASH`: the same inputs give the same folder."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:10]
    return f"{name}-{digest}"


def spec_identity(spec: Spec) -> list[str]:
    """The spec file a search asks about, as its id names it: the file, resolved, and the
    folder its relative paths (the workdir, `files`) are read against where that is not
    the file's own.

    The file resolved is one key however it is named: `specs/x.yaml`, `./specs/x.yaml`,
    `../proj/specs/x.yaml` from another folder, its absolute path; two files are never one.
    The folder is `Spec.base_dir`, the folder of the path as given, its link not followed:
    a link to the spec from another folder runs it there, in that folder's workdir. Keyed
    on the file alone, such a run replayed the target's probes and answered its culprits
    though the failing cell never failed in the link's folder. Only then is the
    folder a part of its own, so a search of a spec named without a link keeps its id.
    """
    file = Path(spec.path).resolve()
    folder = spec.base_dir.resolve()
    return [str(file)] if folder == file.parent else [str(file), str(folder)]


def search_id(
    spec: Spec, attempts: Sequence[AttemptPlan], options: RunOptions, question: Sequence[str]
) -> str:
    """The folder of a search (isolate's, amplify's, minimize's): `NAME-HASH` of what
    decides a probe's outcome, and of the search's question (`question`: isolate's two
    sides and expect, amplify's cell and perturbations, minimize's cells and program).

    What decides an outcome, whichever search runs the probe: the spec's file and the folder
    it runs in (`spec_identity`), its text, the program it runs (export.tree.program_digest:
    its script, the local modules it imports, the files it names, by content), the `--set`
    overrides, the runner, and what a probe runs under (`--timeout`: a hang at 5s may pass
    at 60s; `--python`, `--find-links`, `--gpus`, `--preload`). Never the search's own
    settings (`--budget`, `--error`, `--min-rate`, `-j`): they choose which probes run, not
    what one does, so the same command with a larger `--budget` finds the same folder,
    replays what the smaller one ran and goes on (keyed on them, it started over and ran
    every probe again).
    """
    run: list[JsonValue] = [
        options.timeout_s,
        options.python,
        str(options.find_links or ""),
        options.gpus,
        None if options.preload is None else list(options.preload),
    ]
    variables = variables_read(spec, options.out)
    if variables:
        run.append(variables)
    return isolation_id(
        spec.name,
        [
            *spec_identity(spec),
            spec.source_text,
            program_digest(attempts),
            json.dumps(list(options.overrides)),
            options.runner,
            json.dumps(run),
            *question,
        ],
    )


def variables_read(spec: Spec, out: Path) -> JsonValue:
    """The values of the variables the spec reads (`${{ env.MODE }}`) as a search's key holds
    them ([] where it reads none): its text does not hold them, and `MODE=b reprospec
    isolate` replayed the probes of MODE=a. Digested under the store's key, not hashed
    plainly into a folder's name: a token's value could be tested against a plain hash
    (store/digests.py). isolate's, amplify's, minimize's and bisect's."""
    from reprospec.core import expr
    from reprospec.spec.checks.cells import NOT_INTERPOLATED
    from reprospec.store.digests import store_key, variable_digests

    evaluated = {k: v for k, v in spec.document.items() if k not in NOT_INTERPOLATED}
    try:
        names = expr.names_used(evaluated)
    except expr.ExprError:
        return []  # validation refused it before any search
    read = sorted({n.split(".", 1)[1] for n in names if n.startswith("env.") and "." in n})
    return variable_digests(store_key(out), os.environ, read)["of"] if read else []


def forget_could_not_run(path: Path, header: Mapping[str, JsonValue]) -> str:
    """Remove a stored state none of whose attempts could run, and give the last reason
    ("" where any ran, or none is stored). Such a search (isolate's, minimize's) ended
    `infra-error` (exit 3) and learned nothing of the program: replayed, the same command
    answered "could not run" again once the machine was fixed (the command put on PATH).
    The numbers of probes Ctrl-C cut short (`"cut"`) stay, as amplify's state keeps them:
    removed, the resumed search numbered its attempts from 1 again, as the cut run had."""
    if not path.exists():
        return ""
    probes, cut = read_probes(path, header, StoredProbe.from_dict, FORMAT, "isolate", "isolation")
    reason = could_not_run(probes)
    if reason and cut:
        write_atomic(path, _state_json(dict(header), [], cut))
    elif reason:
        path.unlink()
    return reason


def _state_json(
    header: Mapping[str, JsonValue], probes: Sequence[StoredProbe], cut: Mapping[str, int]
) -> str:
    """state.json's text: the search's header, its probes, the numbers Ctrl-C cut short
    (`"cut"`, left out where none): the one layout StateFile and `forget_could_not_run`
    write."""
    data = {
        "format": FORMAT,
        "header": header,
        "probes": [p.to_dict() for p in probes],
        **({"cut": dict(sorted(cut.items()))} if cut else {}),
    }
    return json.dumps(data, indent=1)


@contextlib.contextmanager
def held_state(
    folder: Path, header: JsonObject, search: str, say: Callable[[str], None]
) -> Iterator[StateFile]:
    """The state of search `search` (`isolation ID`, `minimization ID`) in `folder`, read
    while the folder is held alone (core/trylock.py: two of the same command each ran every
    probe, and the last to write state.json dropped the other's), less a stored state none
    of whose attempts could run (`forget_could_not_run`, said)."""
    with search_held(folder, search):
        if gone := forget_could_not_run(folder / "state.json", header):
            say(not_replayed(search, gone))
        yield StateFile(folder, header)


def not_replayed(search: str, reason: str) -> str:
    """What search `search` (`amplification ID`) says of an earlier run none of whose
    attempts could run (`reason`, the last one's): isolate's, minimize's and amplify's."""
    return f"{search}: its earlier run's attempts could not run ({reason}): run again, not replayed"


def continuing(search: str, stored: int, budget: int) -> str:
    """What search `search` says as it goes on from `stored` probes of an earlier run
    (interrupted, out of budget, or finished): isolate's, minimize's and amplify's."""
    return (
        f"continuing {search}: {plural(stored, 'probe')} from an earlier run to replay, "
        f"counted in the budget of {budget}"
    )


class CannotGoOn(UsageError):
    """check_out_to_go_on's refusal; `why` is the --out's, for a caller that words its own
    (minimize's step 1, whose isolate runs under a share of minimize's --budget), and
    `interrupted` whether the search goes on from an interrupted run (else past its earlier
    run's --budget)."""

    def __init__(self, message: str, why: str, *, interrupted: bool = False) -> None:
        super().__init__(message)
        self.why = why
        self.interrupted = interrupted


def check_out_to_go_on(
    out: Path, folder: Path, answer: str, budget: int, search: str, *, replays: bool = True
) -> None:
    """Refuse, before anything replays, a search that goes on past its earlier run on an
    --out that cannot be written: the new attempts' runs go there. A finished run of
    isolate, minimize or amplify given a larger --budget replayed every stored probe, ran
    its first new attempt, and only then exited 2, on the results store's words (`out is
    read-only to this user`, for root on a read-only mount too).

    It goes on where its earlier answer (`answer`, its isolate.json, minimize.json or
    amplify.json in `folder`) says it was interrupted, or that its budget ran out (isolate's
    status `budget` or its `budget_spent`: refused as the budget too small, amplify's and
    minimize's search `budget_spent`) and `budget` is larger than that run's (an
    interrupted one's: than the attempts it ran, where `replays`; minimize's, whose stored
    probes never hold the final check of its best, nor step 2 where step 1 was stopped, goes
    on whatever its budget). Anything else (no answer, an earlier
    version's without its budget, a finished one, the same budget) is left to the replay: a
    replay to a known answer prints it, with a warning that it could not be saved."""
    try:
        earlier = json.loads((folder / answer).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(earlier, dict):
        return
    search_part = earlier.get("search")
    spent = (
        earlier.get("status") == "budget"
        or earlier.get("budget_spent") is True
        or (isinstance(search_part, dict) and search_part.get("budget_spent") is True)
    )
    before = earlier.get("budget")
    larger = spent and isinstance(before, int) and budget > before
    # An interrupted one goes on where `budget` is past the attempts it ran (amplify's
    # `used`); within them its stored probes answer: a replay, nothing new written.
    said = earlier.get("attempts", earlier.get("used"))
    ran = integer(said)
    stopped = earlier.get("interrupted") is True or earlier.get("status") == "interrupted"
    interrupted = stopped and (not replays or ran is None or budget > ran)
    if not (interrupted or larger):
        return
    why = unwritable(out)
    if not why:
        return
    went = (
        f"a --budget of {budget} continues {search} past its earlier run's --budget of {before}"
        if larger
        else f"{search} goes on from its interrupted run"
    )
    raise CannotGoOn(
        f"--out {out}: cannot be written ({why}), and {went}, whose new attempts' runs go "
        "there: give an --out that can be"
        + (
            f" (or --budget {before} to see its answer again)"
            if larger
            else f" (or --budget {ran} to replay what it ran)"
            if ran and replays
            else ""
        ),
        why,
        interrupted=not larger,
    )


class _Ran(Protocol):
    """What `could_not_run` reads of a stored probe (isolate's, minimize's, amplify's)."""

    @property
    def kinds(self) -> tuple[AttemptKind, ...]: ...

    @property
    def infra_reason(self) -> str: ...


def could_not_run(probes: Sequence[_Ran]) -> str:
    """The last reason where no attempt of `probes` could run ("" where any ran, or none is
    stored): a search that learned nothing of the program, not to be replayed."""
    if not probes or not all(p.kinds and set(p.kinds) == {"infra"} for p in probes):
        return ""
    return probes[-1].infra_reason or "could not run"


P = TypeVar("P")


def read_probes(
    path: Path,
    header: Mapping[str, JsonValue],
    parse: Callable[[Mapping[str, JsonValue]], P],
    fmt: int,
    verb: str,
    search: str,
) -> tuple[list[P], dict[str, int]]:
    """The stored probes of one search (isolate's, amplify's), and the last attempt number
    of each configuration whose probes Ctrl-C cut short and that were not stored
    (`StateFile.cut`: `"cut"` in state.json; {} in a state without it). A damaged file is
    refused, named (exit 2): replaying half of one would give a wrong answer, and guessing
    would hide it; a cut number that is not a whole number >= 1 is damage too. A file of
    another search (its header differs) or an older format starts it over."""
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            raise ValueError(f"larger than {MAX_STATE_BYTES} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("format") != fmt or data.get("header") != header:
            return [], {}
        probes = data.get("probes", [])
        if not isinstance(probes, list) or not all(isinstance(p, dict) for p in probes):
            raise ValueError("its probes are not a list of objects")
        cut = data.get("cut", {})
        numbers = {
            str(key): n
            for key, n in (cut.items() if isinstance(cut, dict) else ())
            if isinstance(n, int) and not isinstance(n, bool) and n >= 1
        }
        if not isinstance(cut, dict) or len(numbers) != len(cut):
            raise ValueError(f"its cut probes' numbers are {cut!r}, not whole numbers >= 1")
        return [parse(p) for p in probes], numbers
    except RecursionError:
        why = "JSON nested too deep"
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        why = str(exc) or type(exc).__name__
    raise UsageError(
        f"{path}: a damaged {verb} state file ({why}); remove it to start this {search} over"
    )


def stored_probes(folder: Path) -> list[StoredProbe]:
    """The probes a finished isolation in `folder` stored, for the caller that ran it
    (minimize's step 1 reads which runs answered its candidates); none without a file."""
    path = folder / "state.json"
    try:
        header = json.loads(path.read_text(encoding="utf-8")).get("header", {})
    except (OSError, ValueError, AttributeError):
        return []
    return read_probes(path, header, StoredProbe.from_dict, FORMAT, "isolate", "isolation")[0]


class StateFile:
    """The probes of one isolation, replayed in order on restart; safe across threads."""

    def __init__(self, folder: Path, header: Mapping[str, JsonValue]) -> None:
        self.folder = folder
        self.path = folder / "state.json"
        self.header = dict(header)
        self._lock = threading.Lock()
        self._probes: list[StoredProbe] = []
        self._replay: dict[str, deque[StoredProbe]] = {}
        # The highest attempt number each configuration's probes used (replayed, or set
        # aside for a probe that runs now): its next probe is numbered after it.
        self._drawn: dict[str, int] = {}
        # The last number set aside for each probe running now, by (configuration, first).
        self._set_aside: dict[tuple[str, int], int] = {}
        # The last number each configuration's probes that Ctrl-C cut short and that were
        # not stored drew (`cut`), kept in the file: a resumed run numbers after them.
        self._cut: dict[str, int] = {}
        if self.path.exists():
            self._probes, self._cut = read_probes(
                self.path, self.header, StoredProbe.from_dict, FORMAT, "isolate", "isolation"
            )
            self._drawn.update(self._cut)
        for probe in self._probes:
            self._replay.setdefault(probe.key, deque()).append(probe)

    @property
    def stored(self) -> int:
        """Probes found from an earlier run of this isolation (interrupted, out of budget,
        or finished), not replayed yet. One cut short before any attempt ended replays
        nothing (its probe runs again): counted, the rerun said "5 probes ... to replay"
        and its answer "4 of them replayed"."""
        return sum(1 for queue in self._replay.values() for probe in queue if probe.kinds)

    def reread(self, again: Callable[[StoredProbe], StoredProbe]) -> int:
        """Each stored probe as `again` gives it (what an earlier version stored, read again
        as this one reads it), written back where any changed; how many changed. Before the
        first `take`: the probes to replay are the stored ones, in their order. A state that
        cannot be written back (a read-only --out whose answer only replays) is read again
        as it is the next time: the replay goes on, where the write failed it."""
        with self._lock:
            probes = [again(p) for p in self._probes]
            pairs = zip(probes, self._probes, strict=True)
            changed = sum(after != before for after, before in pairs)
            if changed:
                self._probes = probes
                self._replay = {}
                for probe in probes:
                    self._replay.setdefault(probe.key, deque()).append(probe)
                with contextlib.suppress(OSError):
                    self._write()
            return changed

    def take(self, key: str, attempts: int) -> StoredProbe | None:
        """The next stored probe of this configuration, in the order they first ran, with at
        most `attempts` of its attempts (the rest stay first in line for this key): isolate
        and minimize under a smaller budget than the stored run's ask for fewer near its
        end, and replaying more would spend past the budget."""
        with self._lock:
            queue = self._replay.get(key)
            if not queue:
                return None
            stored = queue.popleft()
            if len(stored.kinds) > max(1, attempts):
                cut = max(1, attempts)
                rest, raised = stored.kinds[cut:], stored.raised[cut:]
                numbers = stored.numbers
                later = numbers[cut] if numbers else stored.first_attempt + cut
                queue.appendleft(
                    replace(
                        stored,
                        kinds=rest,
                        raised=raised,
                        places=stored.places[cut:],
                        first_attempt=later,
                        numbers=numbers[cut:],
                    )
                )
                stored = replace(
                    stored,
                    kinds=stored.kinds[:cut],
                    raised=stored.raised[:cut],
                    places=stored.places[:cut],
                    numbers=numbers[:cut],
                )
            last = stored.last_attempt
            drawn = self.drawn_as(key)
            self._drawn[drawn] = max(self._drawn.get(drawn, 0), last)
            return stored

    def first_attempt(self, key: str, attempts: int) -> int:
        """The number of the first of `attempts` a probe of this configuration runs now,
        after every attempt its earlier probes used (replayed, or running beside it), and
        set aside for it. A `${{ attempt }}` seed or a workload fault's `probability` coin
        then draws new values in each probe: numbered from 1, every probe drew the same
        first few again, and the search counted them as new samples."""
        with self._lock:
            drawn = self.drawn_as(key)
            first = self._drawn.get(drawn, 0) + 1
            self._drawn[drawn] = self._set_aside[drawn, first] = first + max(1, attempts) - 1
            return first

    def drew(self, key: str, last: int) -> None:
        """Attempts up to `last` of this configuration ran before any probe of it: isolate's
        run of the matrix, which picked the sides (its attempt 1 of each cell). The first
        probe of the failing side drew attempt 1 again, whose seed had just reproduced: a
        sample the search counted as new."""
        with self._lock:
            drawn = self.drawn_as(key)
            self._drawn[drawn] = max(self._drawn.get(drawn, 0), last)

    def cut(self, key: str, first: int) -> None:
        """A probe of `key` numbered from `first` that Ctrl-C cut short and that is not
        stored (minimize asks it again, whole, in the resumed run): the numbers set aside
        for it stay drawn, in the file too. Forgotten, the resumed run numbered its probe
        from `first` again: the cut run's attempts (`cells/CELL/2/`, kept or set aside)
        and the new run's bore the same numbers, and a `${{ attempt }}` seed drew the
        values the cut run had drawn."""
        with self._lock:
            drawn = self.drawn_as(key)
            aside = self._set_aside.pop((drawn, first), None)
            if aside is None:
                return  # nothing was numbered for it: it never started
            self._cut[drawn] = max(self._cut.get(drawn, 0), aside)
            self._write()

    @staticmethod
    def drawn_as(key: str) -> str:
        """The configuration whose attempt numbers a probe of `key` draws from: its own,
        but a minimize recheck's, which runs the failing probes' program again (the same
        run, numbered after theirs)."""
        role, sep, program = key.partition(":")
        return f"failing:{program}" if sep and role == "recheck" else key

    def add(self, probe: StoredProbe) -> None:
        """Record a probe that just ran (written to disk at once)."""
        with self._lock:
            drawn = self.drawn_as(probe.key)
            aside = self._set_aside.pop((drawn, probe.first_attempt), None)
            if aside is not None and self._drawn.get(drawn) == aside:
                # It stopped early (its first reproduction), and no probe of it was numbered
                # after it since: the next one goes on from its last attempt, so that the
                # numbers are the draws made, as a replay of the stored probes counts them.
                self._drawn[drawn] = probe.last_attempt
            self._probes.append(probe)
            self._write()

    def runs(self) -> list[str]:
        """Every run this isolation used, in order."""
        with self._lock:
            return list(dict.fromkeys(p.run_id for p in self._probes if p.run_id))

    def _write(self) -> None:
        write_atomic(self.path, _state_json(self.header, self._probes, self._cut))
