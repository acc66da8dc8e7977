"""A hang's place, as minimize compares two hangs (minimize/hangplace.py), and the search's
rule that rejects a candidate whose hang sits elsewhere (search.py's point 7,
`hangs-elsewhere`). Stack dumps as the engine writes them (stack.txt, faulthandler's)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.core.results import AttemptResult, Outcome
from reprospec.isolation.candidates import AttemptKind
from reprospec.isolation.state import StoredProbe
from reprospec.minimize.hangplace import (
    LOOKS,
    NATIVE,
    NOWHERE,
    UNREAD,
    attempt_place,
    moved,
    place_of,
    places_said,
)
from reprospec.minimize.program import Program
from reprospec.minimize.search import Minimization, Probe, Settings
from reprospec.outcome.hangsource import on_disk, source_at
from reprospec.process.childprotocol import STACK_TXT
from reprospec.runners import workdir_inside
from tests.support.minimizing import proposing

LIB = "/root/.pyenv/versions/3.11.7/lib/python3.11"

DEADLOCK = f"""\
--- pid 29787 (python deadlock.py --batch 4) ---
Thread 0x00007fd9b3a796c0 (most recent call first):
  File "/tmp/h/deadlock.py", line 17 in w2
  File "{LIB}/threading.py", line 982 in run
  File "{LIB}/threading.py", line 1002 in _bootstrap

Thread 0x00007fd9b427a6c0 (most recent call first):
  File "/tmp/h/deadlock.py", line 12 in w1
  File "{LIB}/threading.py", line 982 in run
  File "{LIB}/threading.py", line 1002 in _bootstrap

Current thread 0x00007fd9b5042b80 (most recent call first):
  File "{LIB}/threading.py", line 1139 in _wait_for_tstate_lock
  File "{LIB}/threading.py", line 1119 in join
  File "/tmp/h/deadlock.py", line 19 in <module>
"""

# The same deadlock, two lines shorter, in a candidate's own folder: the same place.
SHORTER = DEADLOCK.replace("/tmp/h/", "/tmp/m/candidates/ab12/").replace("line 17", "line 15")

# One thread at a Barrier no other thread reaches, joined: the function w2 kept, its wait not.
BARRIER = f"""\
--- pid 4242 (python deadlock.py --batch 4) ---
Thread 0x00007f0000000001 (most recent call first):
  File "{LIB}/threading.py", line 327 in wait
  File "{LIB}/threading.py", line 708 in _wait
  File "{LIB}/threading.py", line 685 in wait
  File "/tmp/h/deadlock.py", line 5 in w2
  File "{LIB}/threading.py", line 982 in run
  File "{LIB}/threading.py", line 1002 in _bootstrap

Current thread 0x00007f0000000002 (most recent call first):
  File "{LIB}/threading.py", line 1139 in _wait_for_tstate_lock
  File "{LIB}/threading.py", line 1119 in join
  File "/tmp/h/deadlock.py", line 7 in <module>
"""

# Its main thread left the program (no join) and waits at exit for the thread: as a join.
AT_EXIT = f"""\
--- pid 4243 (python deadlock.py) ---
Thread 0x00007f0000000001 (most recent call first):
  File "{LIB}/threading.py", line 327 in wait
  File "/tmp/h/deadlock.py", line 5 in w2
  File "{LIB}/threading.py", line 1002 in _bootstrap

Current thread 0x00007f0000000002 (most recent call first):
  File "{LIB}/threading.py", line 1139 in _wait_for_tstate_lock
  File "{LIB}/threading.py", line 1590 in _shutdown
"""

# No frame of the program's own: `python -m` of a package's module, stuck in it.
LIBRARY_ONLY = f"""\
--- pid 4244 (python -m spin) ---
Current thread 0x00007f0000000002 (most recent call first):
  File "{LIB}/site-packages/spin/__main__.py", line 3 in <module>
  File "<frozen runpy>", line 198 in _run_module_as_main
"""


def test_a_hangs_place_is_its_threads_functions_and_what_they_wait_in_not_its_lines() -> None:
    assert place_of(DEADLOCK, source=on_disk) == "w1, w2"
    assert place_of(SHORTER, source=on_disk) == place_of(DEADLOCK, source=on_disk)
    assert place_of(BARRIER, source=on_disk) == (
        "w2 -> threading.py:wait -> threading.py:_wait -> threading.py:wait"
    )
    assert place_of(AT_EXIT, source=on_disk) == "w2 -> threading.py:wait"
    assert place_of(LIBRARY_ONLY, source=on_disk) == NOWHERE
    assert place_of("", source=on_disk) == place_of(None, source=on_disk) == UNREAD


def test_a_place_the_original_never_hung_in_moved_and_an_unread_one_never_did() -> None:
    assert moved([place_of(BARRIER, source=on_disk)], [place_of(DEADLOCK, source=on_disk)]) == (
        place_of(BARRIER, source=on_disk),
    )
    assert moved([NOWHERE], ["w1, w2"]) == (NOWHERE,)
    assert moved([place_of(SHORTER, source=on_disk)], [place_of(DEADLOCK, source=on_disk)]) == ()
    assert moved([UNREAD], ["w1, w2"]) == ()  # the candidate's unread
    assert moved([place_of(BARRIER, source=on_disk)], [UNREAD]) == ()  # the original's unread
    # A flaky original that hung in two places: either is its own.
    assert moved(["b", "a"], ["a", "b", UNREAD]) == ()


def test_a_place_is_compared_by_its_threads_so_a_trimmed_thread_is_no_new_hang() -> None:
    # A monitor thread beside the deadlock, dropped: the deadlock's threads sit as before.
    assert moved(["w1, w2"], ["monitor, w1, w2"]) == ()
    # Three transfer threads cut to two, or to one.
    assert moved(["transfer, transfer"], ["transfer, transfer, transfer"]) == ()
    assert moved(["transfer"], ["transfer, transfer, transfer"]) == ()
    # A busy producer caught in a function no attempt of the original's showed it in,
    # beside the consumer hung as the original's: the same hang.
    assert moved(["consume, produce_more"], ["consume, produce", "consume, <module>"]) == ()
    # None of its threads sits as any of the original's did: moved, as before.
    assert moved([place_of(BARRIER, source=on_disk)], ["monitor, w1, w2"]) == (
        place_of(BARRIER, source=on_disk),
    )
    assert moved(["monitor2, w3"], ["monitor, w1, w2"]) == ("monitor2, w3",)
    assert moved([NOWHERE], ["monitor, w1, w2"]) == (NOWHERE,)
    # The monitor kept alone, the deadlock beside it cut away: its endless loop still hangs,
    # in one thread of the original's three; not the original's hang.
    assert moved(["monitor"], ["monitor, w1, w2"]) == ("monitor",)
    assert moved(["monitor, w9"], ["monitor, w1, w2"]) == ("monitor, w9",)


def test_a_lone_busy_thread_seen_where_the_original_was_once_has_not_moved() -> None:
    # A busy loop is caught wherever the sampler finds it: in `step` in one attempt, in
    # `spin` (where every attempt of the original's was caught) in another.
    assert moved(["step"], ["spin"]) == ("step",)  # one sighting: elsewhere so far
    assert moved(["step", "spin"], ["spin"]) == ()
    assert moved(["step", UNREAD], ["spin"]) == ("step",)
    assert moved(["step", "loop"], ["spin"]) == ("loop", "step")


def test_the_search_looks_again_at_a_busy_thread_seen_elsewhere_once() -> None:
    # The original's busy thread was caught in `spin` in each attempt; candidate "once" is
    # caught in `step` at its first hang and in `spin` at its next (the same busy loop),
    # "twice" in `step` and `tick` (another loop). Each program passes its passing cell.
    sightings = {"original": ["spin"], "once": ["step", "spin"], "twice": ["step", "tick"]}
    seen: dict[str, int] = {}

    def answer(probe: Probe, text: str) -> Answer:
        if probe.role == "passing":
            return ("pass",), ("",)
        n = seen.get(text, 0)
        seen[text] = n + 1
        order = sightings[text]
        return ("match",), (order[min(n, len(order) - 1)],)

    search = searched(("twice", "once"), answer)
    result = search.result
    assert result is not None
    assert verdicts(search) == {"original": "fails", "twice": "hangs-elsewhere", "once": "fails"}
    rejected = next(j for j in result.judged if j.verdict == "hangs-elsewhere")
    assert rejected.hung_elsewhere == ("step", "tick")
    assert rejected.failing.matched == 2  # looked at again, once
    assert result.program == program("once")


def program(text: str) -> Program:
    return Program(head=("python", "h.py"), args=(), files=(("h.py", text),))


# What a probe's attempts ended as, and where each hung ("" where none did).
Answer = tuple[tuple[AttemptKind, ...], tuple[str, ...]]


def searched(proposed: tuple[str, ...], answer: Callable[[Probe, str], Answer]) -> Minimization:
    """A search of program("original") that proposes `proposed` in turn, each probe (of the
    program whose text is given) answered by `answer`, run to its result."""
    search = Minimization(
        program("original"), Settings(passing=1, budget=200), proposing(*map(program, proposed))
    )
    while search.result is None:
        for probe in search.next_probes():
            kinds, places = answer(probe, dict(search.program(probe.key).files)["h.py"])
            search.record(probe, kinds, "", (), places)
    return search


def verdicts(search: Minimization) -> dict[str, str]:
    """Each judged program's verdict, by its text."""
    assert search.result is not None
    return {dict(search.program(j.key).files)["h.py"]: j.verdict for j in search.result.judged}


def test_the_search_rejects_a_candidate_whose_hang_sits_elsewhere_and_replays_the_same() -> None:
    # Every program hangs (a match) in its failing cell and passes its passing cell; where
    # each hangs is its stack's place, "" for one whose stacks were not read.
    stacks = {"original": DEADLOCK, "barrier": BARRIER, "unread": "", "shorter": SHORTER}
    stored: list[tuple[str, tuple[AttemptKind, ...], tuple[str, ...]]] = []

    def drive(replay: list[tuple[str, tuple[AttemptKind, ...], tuple[str, ...]]]) -> Minimization:
        def answer(probe: Probe, text: str) -> Answer:
            if replay:
                _, kinds, places = replay.pop(0)
            else:
                n = 1 if probe.role == "passing" else max(1, probe.attempts)
                hangs = probe.role != "passing"
                kind: AttemptKind = "match" if hangs else "pass"
                kinds = (kind,) * n
                places = (place_of(stacks[text], source=on_disk),) * n if hangs else ("",) * n
                stored.append((probe.role, kinds, places))
            # Through the state file's line, as a resumed minimize replays it.
            line = StoredProbe(probe.key, (), probe.role, kinds, "r", places=places)
            again = StoredProbe.from_dict(line.to_dict())
            return again.kinds, again.places

        return searched(("barrier", "unread", "shorter"), answer)

    first = drive([])
    result = first.result
    assert result is not None
    assert result.status == "minimized", result.message
    assert verdicts(first) == {
        "original": "fails",
        "barrier": "hangs-elsewhere",
        "unread": "fails",  # unread: no difference
        "shorter": "fails",
    }
    rejected = next(j for j in result.judged if j.verdict == "hangs-elsewhere")
    assert rejected.hung_elsewhere == (place_of(BARRIER, source=on_disk),)
    assert rejected.passing.attempts == 0  # at its first match: it cost nothing more
    same = result.same_failure
    assert same is not None
    assert same.original_places == ("w1, w2",)
    assert (same.hangs_elsewhere_rejected, same.hung_elsewhere) == (
        1,
        (place_of(BARRIER, source=on_disk),),
    )
    assert result.program == program("shorter")
    # Replayed from what was stored: the same verdicts, the same answer.
    again = drive(list(stored))
    assert again.result is not None
    assert [j.verdict for j in again.result.judged] == [j.verdict for j in result.judged]
    assert again.result.program == result.program


def test_a_hang_outside_the_programs_code_is_said_so_in_minimize_md() -> None:
    # NOWHERE is a child that is no Python program, not a frame: "hung in no frame of the
    # program's own code" read as a place.
    from types import SimpleNamespace
    from typing import cast

    from reprospec.minimize.report import _hung_in
    from reprospec.minimize.search import MinimizeResult

    def said(*places: str) -> str:
        same = SimpleNamespace(original_places=places)
        return _hung_in(cast(MinimizeResult, SimpleNamespace(same_failure=same)))

    assert said(NOWHERE) == " (hung outside the program's code)"
    assert said("w1, w2") == " (hung in w1, w2)"
    assert said() == ""


def test_a_python_c_programs_hang_at_exit_sits_in_its_thread_as_when_joined() -> None:
    # `python -c`: its own frames are `<string>`'s; deleting its `t.join()` left it the same.
    at_exit = AT_EXIT.replace("/tmp/h/deadlock.py", "<string>").replace(
        "python deadlock.py", "python -c import threading"
    )
    joined = at_exit.replace(
        f'  File "{LIB}/threading.py", line 1590 in _shutdown',
        f'  File "{LIB}/threading.py", line 1119 in join\n  File "<string>", line 7 in <module>',
    )
    assert place_of(joined, source=on_disk) == "w2 -> threading.py:wait"
    assert place_of(at_exit, source=on_disk) == place_of(
        joined, source=on_disk
    )  # not NOWHERE, as it was


def test_a_programs_own_c_option_is_no_python_c_at_exit() -> None:
    # `python app.py -c conf.yaml`: its -c is the program's; a thread caught in a generated
    # `<string>` frame (a dataclass's __init__) at exit sits in its own function, not there.
    at_exit = AT_EXIT.replace("python deadlock.py", "python deadlock.py -c conf.yaml").replace(
        '  File "/tmp/h/deadlock.py", line 5 in w2',
        '  File "<string>", line 3 in __init__\n  File "/tmp/h/deadlock.py", line 5 in w2',
    )
    assert place_of(at_exit, source=on_disk) == "w2 -> <string>:__init__ -> threading.py:wait"


def _busy(*frames: str) -> str:
    """A lone main thread's dump, its frames (`path:line:function`) innermost first."""
    head = ["--- pid 77 (python busy.py) ---", "Current thread 0x1 (most recent call first):"]
    for frame in frames:
        path, line, function = frame.rsplit(":", 2)
        head.append(f'  File "{path}", line {line} in {function}')
    return "\n".join(head)


def test_a_lone_busy_thread_is_one_place_wherever_each_dump_caught_it() -> None:
    # Real dumps of one busy loop (`loop` calling a, b and c), and of one spending its time
    # in json: each read where it was caught, a valid candidate hung "elsewhere" at almost
    # every sighting, and step 1's smaller configuration too (review).
    loop = ("/tmp/h/busy.py:17:loop", "/tmp/h/busy.py:19:<module>")
    in_b = _busy("/tmp/h/busy.py:8:<listcomp>", "/tmp/h/busy.py:8:b", *loop)
    in_a = _busy("/tmp/h/busy.py:5:<genexpr>", "/tmp/h/busy.py:5:a", *loop)
    in_loop = _busy(*loop)
    dumps = f"{LIB}/json/__init__.py:231:dumps"
    encoding = _busy(f"{LIB}/json/encoder.py:258:iterencode", dumps, "/tmp/h/j.py:9:main")
    decoding = _busy(f"{LIB}/json/decoder.py:353:raw_decode", "/tmp/h/j.py:10:main")
    # The main thread's function below its `<module>`, compared; where it was caught, said.
    assert [place_of(s, source=on_disk) for s in (in_b, in_a, in_loop)] == [
        "loop (in <listcomp>)",
        "loop (in <genexpr>)",
        "loop",
    ]
    assert moved([place_of(in_loop, source=on_disk)], [place_of(in_b, source=on_disk)]) == ()
    assert place_of(encoding, source=on_disk) == place_of(decoding, source=on_disk) == "main"
    assert moved([place_of(in_a, source=on_disk)], [place_of(in_b, source=on_disk)]) == ()
    assert moved([place_of(decoding, source=on_disk)], [place_of(encoding, source=on_disk)]) == ()
    # One waiting in a blocking call of the library keeps where: an Event's wait in `stuck`.
    waiting = _busy(
        f"{LIB}/threading.py:327:wait",
        f"{LIB}/threading.py:629:wait",
        "/tmp/h/busy.py:4:stuck",
        "/tmp/h/busy.py:9:<module>",
    )
    assert place_of(waiting, source=on_disk) == "stuck -> threading.py:wait -> threading.py:wait"
    assert moved([place_of(waiting, source=on_disk)], [place_of(in_b, source=on_disk)]) == (
        place_of(waiting, source=on_disk),
    )


def test_the_search_looks_again_no_more_than_looks_times_where_later_hangs_are_unread() -> None:
    # "twice" is caught in `step` at its first hang; its later hangs' stacks are not read
    # (no stack.txt). Each look counts, read or not: it is rejected on what was read, not
    # looked at again until the budget runs out.
    sightings = {"original": ["spin"], "twice": ["step", ""]}
    seen: dict[str, int] = {}

    def answer(probe: Probe, text: str) -> Answer:
        if probe.role == "passing":
            return ("pass",), ("",)
        n = seen.get(text, 0)
        seen[text] = n + 1
        order = sightings[text]
        return ("match",), (order[min(n, len(order) - 1)],)

    search = searched(("twice",), answer)
    assert verdicts(search) == {"original": "fails", "twice": "hangs-elsewhere"}
    assert seen["twice"] == LOOKS


def test_the_search_looks_again_as_many_attempts_at_a_time_as_its_step() -> None:
    # The original hangs in every other attempt (in `spin`); "rare" hangs in `step` at its
    # first attempt, then stays clean twice before it hangs in `spin`: with -j 3 its look
    # again asks 3 attempts at once, not one after another.
    seen: dict[str, int] = {}
    asked: list[int] = []

    def answer(probe: Probe, text: str) -> Answer:
        n = max(1, probe.attempts)
        clean: AttemptKind = "pass"
        if probe.role == "passing":
            return (clean,) * n, ("",) * n
        if text == "original":  # hangs in every other attempt
            kinds: tuple[AttemptKind, ...] = tuple("pass" if i % 2 else "match" for i in range(n))
            return kinds, tuple("" if k == "pass" else "spin" for k in kinds)
        n = seen.get(text, 0)
        seen[text] = n + 1
        if n == 0:
            return ("match",), ("step",)
        asked.append(probe.attempts)
        return ("pass", "pass", "match"), ("", "", "spin")

    search = Minimization(
        program("original"),
        Settings(passing=1, budget=200, step=3),
        proposing(program("rare")),
    )
    while search.result is None:
        for probe in search.next_probes():
            kinds, places = answer(probe, dict(search.program(probe.key).files)["h.py"])
            search.record(probe, kinds, "", (), places)
    assert asked[0] == 3
    assert verdicts(search)["rare"] != "hangs-elsewhere"


def test_a_look_agains_match_is_left_out_of_the_rate_as_the_first_is() -> None:
    # "once" hangs in `step`, then in `spin` at its look again, which ran until that match:
    # point 7's rate check counts neither match, only the clean attempt between.
    seen: dict[str, int] = {}
    rate_asked: list[int] = []
    clean: AttemptKind = "pass"

    def answer(probe: Probe, text: str) -> Answer:
        n = max(1, probe.attempts)
        if probe.role == "passing":
            return (clean,) * n, ("",) * n
        if text == "original":  # hangs in one attempt in 5
            kinds: tuple[AttemptKind, ...] = tuple(clean if i % 5 else "match" for i in range(n))
            return kinds, tuple("" if k == "pass" else "spin" for k in kinds)
        k = seen.get(text, 0)
        seen[text] = k + 1
        if k == 0:
            return ("match",), ("step",)
        if k == 1:
            return (clean, "match"), ("", "spin")
        rate_asked.append(probe.attempts)
        hang: AttemptKind = "match"
        return (hang,) * n, ("spin",) * n

    settings = Settings(passing=1, budget=500, step=100)
    search = Minimization(program("original"), settings, proposing(program("once")))
    looks: list[Probe] = []
    while search.result is None:
        for probe in search.next_probes():
            text = dict(search.program(probe.key).files)["h.py"]
            if probe.looking:
                looks.append(probe)
            kinds, places = answer(probe, text)
            search.record(probe, kinds, "", (), places)
    # Point 7's rate check asks what its counted attempts leave of rate_check: 7 of 8.
    assert rate_asked[0] == search.settings.rate_check - 1
    # The look again is marked as one (`looked` is counted from the mark, not inferred from
    # a stop_after probe after a match): once, of the candidate's failing attempts.
    assert [(p.role, dict(search.program(p.key).files)["h.py"]) for p in looks] == [
        ("failing", "once")
    ]


def test_a_library_file_that_only_ends_like_a_blocking_one_is_no_wait() -> None:
    # site-packages' mythreading.py's `wait`, websocket.py's `accept`: passed through, not
    # waited in, so the thread is named by its own function alone (review).
    for path, function in (("mythreading.py", "wait"), ("websocket.py", "accept")):
        dump = _busy(
            f"{LIB}/site-packages/{path}:3:{function}",
            "/tmp/h/busy.py:4:stuck",
            "/tmp/h/busy.py:9:<module>",
        )
        assert place_of(dump, source=on_disk) == "stuck"
    # The library's own still is one.
    stuck = ("/tmp/h/busy.py:4:stuck", "/tmp/h/busy.py:9:<module>")
    dump = _busy(f"{LIB}/threading.py:327:wait", *stuck)
    assert place_of(dump, source=on_disk).endswith("stuck -> threading.py:wait")


def test_a_lone_main_threads_hangs_are_told_apart_by_its_function_below_module() -> None:
    # Each read `<module>` (its outermost frame), so a lock's self-deadlock in main() and a
    # busy loop in train() sat alike, and the words named nothing to act on (review).
    lock = _busy("/tmp/h/h.py:5:stuck", "/tmp/h/h.py:8:main", "/tmp/h/h.py:11:<module>")
    busy = _busy("/tmp/h/h.py:3:step", "/tmp/h/h.py:6:train", "/tmp/h/h.py:11:<module>")
    sleep = _busy("/tmp/h/h.py:2:<module>")
    assert [place_of(s, source=on_disk) for s in (lock, busy, sleep)] == [
        "main (in stuck)",
        "train (in step)",
        "<module>",
    ]
    assert moved([place_of(busy, source=on_disk)], [place_of(lock, source=on_disk)]) == (
        "train (in step)",
    )
    assert moved([place_of(sleep, source=on_disk)], [place_of(lock, source=on_disk)]) == (
        "<module>",
    )
    # Caught in another function of main()'s: the same hang.
    other = lock.replace("5 in stuck", "6 in check")
    assert moved([place_of(other, source=on_disk)], [place_of(lock, source=on_disk)]) == ()
    assert places_said([place_of(lock, source=on_disk)]) == "in main (in stuck)"


def _main_in_stuck(path: str, line: int) -> str:
    return (
        f"--- pid 24383 (python h.py) ---\n"
        f"Current thread 0x00007efeb17cbb80 (most recent call first):\n"
        f'  File "{path}", line {line} in stuck\n'
        f'  File "{path}", line 18 in main\n'
        f'  File "{path}", line 21 in <module>\n'
    )


def test_a_busy_loop_and_a_deadlock_under_one_main_are_two_places(tmp_path: Path) -> None:
    # faulthandler says where a thread is, not whether it runs: both were `main`, told
    # apart in words alone (`main (in stuck)`), and a candidate that made the deadlock an
    # endless loop hung "where the original did". The line the thread is at says it.
    source = tmp_path / "h.py"
    source.write_text(
        "import threading\n"
        "lock = threading.Lock()\n"
        "def stuck():\n"
        "    lock.acquire()  # the first\n"
        "    with lock:\n"
        "        pass\n"
        "    while True:\n"
        "        x = 1\n"
        "    time.sleep(100)\n"
        '    print("#"); time.sleep(9)\n'
        '    print("x")  # sleep(9)\n',
        encoding="utf-8",
    )
    at = str(source)
    acquire = place_of(_main_in_stuck(at, 4), source=on_disk)
    deadlock = place_of(_main_in_stuck(at, 5), source=on_disk)
    busy = place_of(_main_in_stuck(at, 8), source=on_disk)
    assert deadlock == "main -> stuck -> with"
    assert acquire == "main -> stuck -> acquire()"
    assert busy == "main (in stuck)"
    assert place_of(_main_in_stuck(at, 9), source=on_disk) == "main -> stuck -> sleep()"
    # A `#` in a string is no comment; a call named in a comment is none (final read).
    assert place_of(_main_in_stuck(at, 10), source=on_disk) == "main -> stuck -> sleep()"
    assert place_of(_main_in_stuck(at, 11), source=on_disk) == "main (in stuck)"
    assert moved([busy], [deadlock]) == (busy,)
    assert moved([deadlock], [busy]) == (deadlock,)
    # A line gone (the file changed or cannot be read) says nothing: as before.
    assert place_of(_main_in_stuck(at, 99), source=on_disk) == "main (in stuck)"
    assert (
        place_of(_main_in_stuck(str(tmp_path / "gone.py"), 5), source=on_disk) == "main (in stuck)"
    )


STUCK = (
    "import threading\n"
    "lock = threading.Lock()\n"
    "def stuck():\n"
    "    lock.acquire()\n"
    "    with lock:\n"
    "        pass\n"
    "    while True:\n"
    "        x = 1\n"
)


def test_a_place_reads_the_line_a_docker_container_named() -> None:
    # A workdir under /root, /opt, /usr or /var runs at /work in the docker runner's
    # container: its dump's paths could not be read on the host, and every place fell back
    # to `main (in stuck)`, a busy loop and a deadlock one place under docker alone.
    with tempfile.TemporaryDirectory(dir="/var/tmp") as folder:
        workdir = Path(folder)
        (workdir / "pkg").mkdir()
        (workdir / "pkg" / "h.py").write_text(STUCK, encoding="utf-8")
        source = source_at(workdir, container=workdir_inside("docker", workdir))
        assert workdir_inside("local", workdir) is None
        assert (
            place_of(_main_in_stuck("/work/pkg/h.py", 5), source=source) == "main -> stuck -> with"
        )
        assert place_of(_main_in_stuck("/work/pkg/h.py", 8), source=source) == "main (in stuck)"
        assert place_of(_main_in_stuck(f"{folder}/pkg/h.py", 4), source=source).endswith(
            "acquire()"
        )
        # A local attempt's /work/pkg/h.py is that host file (none here), not the
        # workdir's: read as the workdir's, another file's line made the place.
        local = source_at(workdir)
        assert place_of(_main_in_stuck("/work/pkg/h.py", 5), source=local) == "main (in stuck)"
        assert (
            place_of(_main_in_stuck(f"{folder}/pkg/h.py", 5), source=local)
            == "main -> stuck -> with"
        )
    assert (
        place_of(_main_in_stuck("/work/pkg/h.py", 5), source=on_disk) == "main (in stuck)"
    )  # as named


def test_a_relative_workdir_under_a_system_root_is_the_containers_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `-o min` run from /var/tmp (or /root, /opt, /usr) under --runner docker: the
    # container ran it at /work; mapped as typed it was `min`, and every place unread.
    with tempfile.TemporaryDirectory(dir="/var/tmp") as folder:
        monkeypatch.chdir(folder)
        (Path(folder) / "min").mkdir()
        (Path(folder) / "min" / "h.py").write_text(STUCK, encoding="utf-8")
        assert workdir_inside("docker", Path("min")) == "/work"
        source = source_at(Path("min"), container=workdir_inside("docker", Path("min")))
        assert source("/work/h.py") == STUCK
        assert place_of(_main_in_stuck("/work/h.py", 5), source=source) == "main -> stuck -> with"


def test_a_linked_workdir_maps_as_the_runner_maps_it(tmp_path: Path) -> None:
    # The runner maps the plan's workdir, made absolute with its links kept: a link to
    # /root outside the system roots stays its own path there, and a link under /var to
    # a folder outside them is /work. Mapped by its real path, the two disagreed and
    # every dump path read "" (review).
    (tmp_path / "to_root").symlink_to("/root")
    assert workdir_inside("docker", tmp_path / "to_root") == str(tmp_path / "to_root")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as folder:
        (Path(folder) / "proj").symlink_to(tmp_path)
        (tmp_path / "h.py").write_text(STUCK, encoding="utf-8")
        workdir = Path(folder) / "proj"
        assert workdir_inside("docker", workdir) == "/work"
        source = source_at(workdir, container=workdir_inside("docker", workdir))
        assert place_of(_main_in_stuck("/work/h.py", 5), source=source) == "main -> stuck -> with"


def test_a_place_reads_the_candidates_own_text_not_its_folders_when_read(tmp_path: Path) -> None:
    # A live search (run.preload) rewrites one folder for each candidate: a candidate's
    # lines were read from whatever the folder held when its place was read (a stored
    # probe's, read again, from the last candidate's), and a removed folder read as ""
    # (`main (in stuck)`, another hang than the original's deadlock).
    live = tmp_path / "live"
    live.mkdir()
    (live / "h.py").write_text(STUCK.replace("    with lock:", "    pass   :"), encoding="utf-8")
    original = tmp_path / "original.py"
    original.write_text(STUCK, encoding="utf-8")
    (live / "linked.py").symlink_to(original)
    dump = _main_in_stuck(str(live / "h.py"), 5)
    assert place_of(dump, source=source_at(live, [("h.py", STUCK)])) == "main -> stuck -> with"
    assert place_of(dump, source=source_at(live)) == "main (in stuck)"  # what the folder holds now
    # Read again with the candidate's text unknown: the folder's own files are another's,
    # no difference; a link to the original's files is read.
    assert place_of(dump, source=source_at(live, written=False)) == UNREAD
    linked = _main_in_stuck(str(live / "linked.py"), 5)
    assert place_of(linked, source=source_at(live, written=False)) == "main -> stuck -> with"
    gone = tmp_path / "candidates" / "0123456789abcdef"
    assert place_of(_main_in_stuck(str(gone / "h.py"), 5), source=source_at(gone)) == UNREAD
    # A file outside the workdir is read where the dump names it.
    assert (
        place_of(_main_in_stuck(str(original), 5), source=source_at(live))
        == "main -> stuck -> with"
    )


POLLS = (
    "import threading, time\n"
    "lock = threading.Lock()\n"
    "lock.acquire()\n"
    "def work():\n"
    "    with lock:\n"
    "        pass\n"
    "w = threading.Thread(target=work)\n"
    "w.start()\n"
    "while w.is_alive():\n"
    "    time.sleep(0.1)\n"
)


def test_the_threads_a_place_names_are_picked_by_the_attempts_text(tmp_path: Path) -> None:
    # A main thread's sleep loop beside `w` on a lock is a join of `w` (hungstacks), told
    # by reading the main thread's line: that was read from the live folder where the
    # place was read, not from the candidate's text, so the candidate's hang sat in its
    # `<module>`'s sleep where the same text, on disk, sat in `work -> with`.
    live = tmp_path / "live"
    live.mkdir()
    (live / "h.py").write_text(POLLS.replace("time.sleep(0.1)", "x = 1"), encoding="utf-8")
    h = live / "h.py"
    dump = (
        "--- pid 7 (python h.py) ---\n"
        "Thread 0x1 (most recent call first):\n"
        f'  File "{h}", line 5 in work\n'
        f'  File "{LIB}/threading.py", line 1002 in _bootstrap\n\n'
        "Current thread 0x0 (most recent call first):\n"
        f'  File "{h}", line 10 in <module>\n'
    )
    assert place_of(dump, source=source_at(live, [("h.py", POLLS)])) == "work -> with"
    assert place_of(dump, source=source_at(live)) == "<module>"  # what the folder holds now


def test_a_deadlocked_thread_that_waits_elsewhere_is_another_hang_beside_one_kept() -> None:
    # A two-lock deadlock was minimized to w1 waiting forever at a Barrier(0), its lock
    # held, and w2 on that lock: the places as a real run read them. Sharing w2 (half of
    # the original's threads) read as the same hang.
    original = "w1 -> with, w2 -> with"
    barrier = (
        "w1 -> threading.py:wait -> threading.py:_wait -> threading.py:wait_for -> "
        "threading.py:wait, w2 -> with"
    )
    assert moved([barrier], [original]) == (barrier,)
    # Still the same: a thread dropped beside the deadlock, a monitor the original's place
    # does not name, and a busy thread (the original's `worker`) caught in a blocking call.
    assert moved(["w1 -> with"], [original]) == ()
    assert moved(["monitor, w1 -> with, w2 -> with"], [original]) == ()
    assert moved(["consumer -> with, worker -> queue.py:get"], ["consumer -> with, worker"]) == ()


def test_threads_of_one_name_are_counted_as_many_as_the_place_names() -> None:
    # Every Thread subclass's thread is `run`: two workers deadlocked beside a monitor
    # polling, the monitor caught running in the original's dump and in its sleep() in
    # the candidate's. The lost entry is the busy `run`, no wait of the original's.
    assert (
        moved(["run -> with, run -> with, run -> sleep()"], ["run -> with, run -> with, run"]) == ()
    )
    assert moved(["run -> with, run -> sleep()"], ["run -> with, run"]) == ()
    # One of two `run -> with` now waits at a Barrier: moved, as w1 did above.
    barrier = "run -> threading.py:wait, run -> with"
    assert moved([barrier], ["run -> with, run -> with"]) == (barrier,)


def test_a_thread_the_original_caught_waiting_that_now_runs_has_not_moved() -> None:
    # The reverse of the busy worker above: caught in its `get` by the original, running by
    # the candidate; and a main thread's `while t.is_alive(): t.join(0.5)` caught in its loop.
    # Neither waits elsewhere: it runs, and hangs where the original did.
    assert moved(["consumer -> with, worker"], ["consumer -> with, worker -> queue.py:get"]) == ()
    joined = (
        "main -> threading.py:join -> threading.py:_wait_for_tstate_lock, w1 -> with, w2 -> with"
    )
    assert moved(["main, w1 -> with, w2 -> with"], [joined]) == ()


# A C program's hangs (no stack dump: each attempt's `Outcome.hung_native`, marked).
_MUTEX = NATIVE + "lll_lock_wait@libc<-stuck@reap"
_SLEEP = NATIVE + "clock_nanosleep@libc<-stuck@reap"
_ALPHA, _BETA = NATIVE + "alpha@busy", NATIVE + "beta@busy"


def test_a_c_programs_hang_is_placed_by_its_native_place_where_no_dump_was_read(
    tmp_path: Path,
) -> None:
    # stack.txt is empty for a C program: its place was UNREAD, never a difference, so any
    # C candidate that hung anywhere was taken for the same failure.
    hang = Outcome("hang", signature="hang", hung_native="lll_lock_wait@libc<-stuck@reap")
    attempt = AttemptResult(1, 2.0, hang, True, (), "1")
    (tmp_path / "1").mkdir()
    assert attempt_place(tmp_path, attempt, on_disk) == _MUTEX  # no stack.txt at all
    (tmp_path / "1" / STACK_TXT).write_text("")
    assert attempt_place(tmp_path, attempt, on_disk) == _MUTEX
    # A dump read is the place, as before; neither read is unread.
    (tmp_path / "1" / STACK_TXT).write_text(DEADLOCK)
    assert attempt_place(tmp_path, attempt, on_disk) == place_of(DEADLOCK, source=on_disk)
    unplaced = replace(attempt, outcome=replace(hang, hung_native=None), logs="2")
    assert attempt_place(tmp_path, unplaced, on_disk) == UNREAD
    assert places_said([_MUTEX, NOWHERE]) == (
        "in lll_lock_wait@libc<-stuck@reap / outside the program's code"
    )


def test_a_native_place_is_compared_whole_and_a_busy_one_sits_wherever_it_runs() -> None:
    # From a mutex to a sleep: another hang, as a Python thread's moved from a lock.
    assert moved([_SLEEP], [_MUTEX]) == (_SLEEP,)
    assert moved([_MUTEX], [_MUTEX, UNREAD]) == ()
    # busy.c, caught in alpha() by the original's looks and in beta() by the candidate's:
    # one busy loop, not another hang.
    assert moved([_BETA, _BETA], [_ALPHA]) == ()
    assert moved([_MUTEX], [_ALPHA]) == (_MUTEX,)  # a wait the running original never had
    # libgomp's barrier spins on its futex inline: a deadlock there is no busy loop of the
    # program's (`compute@prog`), either way; nor is another executable's loop this one's.
    gomp = NATIVE + "gomp_barrier_wait_end@libgomp"
    assert moved([gomp], [_ALPHA]) == (gomp,)
    assert moved([_ALPHA], [gomp]) == (_ALPHA,)
    assert moved([NATIVE + "do_wait@libgomp"], [gomp]) == (NATIVE + "do_wait@libgomp",)
    assert moved([NATIVE + "alpha@other"], [_BETA]) == (NATIVE + "alpha@other",)
    # Whole: a C++ name's `, ` is no second thread (`_entries` splits a Python place there).
    held = NATIVE + "lll_lock_wait@libc<-Cache<int, int>::get@prog"
    other = NATIVE + "lll_lock_wait@libc<-Cache<long, int>::get@prog"
    assert moved([other], [held]) == (other,)
    assert moved([held], [held]) == ()
    # Never compared with a Python place's threads: no difference either way.
    assert moved([_MUTEX], ["w1, w2"]) == ()
    assert moved(["w1, w2"], [_MUTEX]) == ()


def test_the_search_rejects_a_c_candidate_whose_hang_moved_from_a_mutex_to_a_sleep() -> None:
    # Each program hangs in its failing cell and passes its passing cell; "sleep" hangs in
    # a sleep where the original waited on a mutex, "busy" is caught in beta() where the
    # original's look caught alpha(): every C candidate was "fails" (its place UNREAD).
    sightings = {"original": _ALPHA, "sleep": _SLEEP, "busy": _BETA}
    mutex = {"original": _MUTEX, "sleep": _SLEEP, "busy": _MUTEX}

    def answer(places: dict[str, str]) -> Callable[[Probe, str], Answer]:
        def answered(probe: Probe, text: str) -> Answer:
            if probe.role == "passing":
                return ("pass",), ("",)
            match: AttemptKind = "match"
            kinds = (match,) * max(1, probe.attempts)
            return kinds, (places[text],) * max(1, probe.attempts)

        return answered

    moving = searched(("sleep",), answer(mutex))
    assert verdicts(moving) == {"original": "fails", "sleep": "hangs-elsewhere"}
    assert moving.result is not None
    rejected = next(j for j in moving.result.judged if j.verdict == "hangs-elsewhere")
    assert rejected.hung_elsewhere == (_SLEEP,)
    assert rejected.failing.matched >= LOOKS  # looked at again before it was rejected
    busy = searched(("busy",), answer({k: v for k, v in sightings.items() if k != "sleep"}))
    assert verdicts(busy) == {"original": "fails", "busy": "fails"}
