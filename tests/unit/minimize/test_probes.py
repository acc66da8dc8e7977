"""What one probe's attempts say (the exceptions an attempt raised, read from its logs) and
how long a candidate may run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from reprospec.core.results import AttemptResult, Outcome
from reprospec.isolation.state import StateFile, StoredProbe
from reprospec.minimize.probes import RAISED_FROM, _raised, reread
from reprospec.outcome.hangsource import Source, on_disk
from reprospec.store.resultsjson import run_to_dict
from tests.support.files import written
from tests.support.runs import error_run


def _as_named(_probe: StoredProbe) -> Source:
    """The files a dump names read where it names them (these probes' dumps name none)."""
    return on_disk


def test_the_exceptions_an_attempt_raised_are_read_from_stdout_too(tmp_path: Path) -> None:
    """A program whose tracebacks go to stdout (a shell's `2>&1`, a logger to stdout): a
    candidate's new exception there was never seen, and the candidate was kept."""
    thread_died = (
        'Exception in thread evictor:\nTraceback (most recent call last):\n  File "e.py", '
        "line 3, in evictor\nAttributeError: 'Namespace' object has no attribute 'gap'\n"
    )
    crashed = 'Traceback (most recent call last):\n  File "e.py", line 9\nKeyError: 3\n'
    written(tmp_path, {"cells/1/stdout.log": thread_died, "cells/1/stderr.log": crashed})
    segv = Outcome(kind="crash", signal="SIGSEGV", signature="crash:SIGSEGV:main")
    attempt = AttemptResult(1, 0.1, segv, True, (), "cells/1")

    assert _raised(tmp_path, attempt) == ("KeyError", "AttributeError")
    assert _raised(tmp_path, replace(attempt, logs="")) == ()


def test_what_the_main_process_logged_to_stdout_after_a_workers_death_is_not_read(
    tmp_path: Path,
) -> None:
    """A worker's SIGSEGV reported on stderr, and the main process, which lived on, logged
    the death's consequence to stdout: a ConnectionResetError in one attempt, an EOFError
    or a RuntimeError in the next (one program, eight real attempts). Two files hold no
    order: it is read as stderr's tail after the report is, not at all, or a candidate
    whose attempt drew another consequence than the original's would be rejected."""
    report = "ERROR: Unexpected segmentation fault encountered in worker.\n"
    logged = (
        "ERROR:train:training failed\nTraceback (most recent call last):\n"
        '  File "prog.py", line 20, in <module>\n'
        "ConnectionResetError: [Errno 104] Connection reset by peer\n"
    )
    before = 'Traceback (most recent call last):\n  File "e.py", line 3\nKeyError: 3\n'
    written(
        tmp_path,
        {
            "cells/1/stderr.log": report,
            "cells/1/stdout.log": logged,
            # `2>&1`: the report on stdout itself, which it is read up to.
            "cells/2/stdout.log": before + report + logged,
        },
    )
    worker = Outcome(kind="crash", signal="SIGSEGV", where="worker", signature="crash:SIGSEGV")
    attempt = AttemptResult(1, 0.1, worker, True, (), "cells/1")

    assert _raised(tmp_path, attempt) == ()
    assert _raised(tmp_path, replace(attempt, logs="cells/2")) == ("KeyError",)
    # The main process's own death: nothing it printed came after it.
    main = replace(worker, where="main")
    assert _raised(tmp_path, replace(attempt, outcome=main)) == ("ConnectionResetError",)


def test_an_earlier_versions_probe_has_its_exceptions_read_again_from_its_run(
    tmp_path: Path,
) -> None:
    """A state stored by a version that read stderr alone holds the original's RuntimeError
    only; this version reads stdout too, and a candidate whose logger printed the same
    KeyError on stdout was rejected for an exception "the original never printed"."""
    run = error_run()
    cell = replace(run.cells[1], attempts=(replace(run.cells[1].attempts[0], logs="cells/1/"),))
    run = replace(run, cells=(cell,))
    folder = tmp_path / "runs" / run.run_id
    logged = "ERROR:train:skipped a batch\nTraceback (most recent call last):\nKeyError: 7\n"
    raised = 'Traceback (most recent call last):\n  File "t.py", line 3\nRuntimeError: nan\n'
    written(folder, {"cells/1/stdout.log": logged, "cells/1/stderr.log": raised})
    (folder / "results.json").write_text(json.dumps(run_to_dict(run)))
    old = StoredProbe(
        "failing:p", (), "failing", ("match",), run.run_id, raised=(("RuntimeError",),)
    )

    again = reread(old, tmp_path / "runs", _as_named)

    assert (again.raised, again.raised_from) == ((("RuntimeError", "KeyError"),), RAISED_FROM)
    assert reread(again, tmp_path / "runs", _as_named) is again  # read by this version: as it is
    # Its run gone: unknown, not stderr's alone (the search then takes none as new), and
    # stamped: its results.json was looked for again at every resume (review 11).
    gone = reread(replace(old, run_id="20261121-000000-gone-0000"), tmp_path / "runs", _as_named)
    assert (gone.raised, gone.raised_from) == ((), RAISED_FROM)
    assert reread(gone, tmp_path / "runs", _as_named) is gone
    passed = replace(old, key="passing:p", role="passing", kinds=("pass",), run_id="gone")
    assert reread(passed, tmp_path / "runs", _as_named).raised_from == RAISED_FROM
    state = StateFile(tmp_path / "state", {"spec": "s"})
    state.add(replace(old, run_id="20261121-000000-gone-0000"))
    assert state.reread(lambda probe: reread(probe, tmp_path / "runs", _as_named)) == 1
    resumed = StateFile(tmp_path / "state", {"spec": "s"})
    assert resumed.reread(lambda probe: reread(probe, tmp_path / "runs", _as_named)) == 0


def test_an_earlier_versions_hang_places_are_read_once_from_its_stack_dumps(
    tmp_path: Path,
) -> None:
    """A state stored before places were: each failing probe's are read from its runs'
    stack.txt, once. A probe that never hung was rewritten at each version's first resume
    with a place "" per attempt, and one whose runs were gone had its results.json looked
    for at every resume: stamped, each is read no more."""
    from reprospec.isolation.state import StateFile
    from reprospec.minimize.hangplace import place_of
    from reprospec.minimize.probes import PLACES_FROM
    from tests.unit.minimize.test_hangplace import DEADLOCK

    run = error_run()
    hang = Outcome(kind="hang", signature="hang")
    first = replace(run.cells[1].attempts[0], outcome=hang, logs="cells/1/")
    attempts = (first, replace(first, attempt=2, logs="cells/2/"))  # its dump lost
    run = replace(run, cells=(replace(run.cells[1], attempts=attempts),))
    runs = tmp_path / "runs"
    written(runs / run.run_id, {"cells/1/stack.txt": DEADLOCK, "cells/2/stderr.log": ""})
    (runs / run.run_id / "results.json").write_text(json.dumps(run_to_dict(run)))
    hung = StoredProbe("f", (), "failing", ("match", "match"), run.run_id, raised_from=RAISED_FROM)
    gone = replace(hung, key="g", run_id="20261121-000000-gone-0000")
    passed = replace(hung, key="p", role="passing", kinds=("pass",))
    state = StateFile(tmp_path / "state", {"spec": "s"})
    for probe in (hung, gone, passed):
        state.add(probe)

    assert state.reread(lambda probe: reread(probe, runs, _as_named)) == 2  # passing: never read
    again = StateFile(tmp_path / "state", {"spec": "s"})
    assert again.reread(lambda probe: reread(probe, runs, _as_named)) == 0
    read, lost = again.take("f", 2), again.take("g", 2)
    assert read is not None
    assert lost is not None
    assert (read.places, read.places_from) == (
        (place_of(DEADLOCK, source=on_disk), ""),
        PLACES_FROM,
    )
    assert (lost.places, lost.places_from) == ((), PLACES_FROM)
    # A probe that matched without hanging is stored without a place per attempt.
    line = replace(hung, places=("", ""), places_from=PLACES_FROM).to_dict()
    assert "places" not in line
    assert StoredProbe.from_dict(line).places_from == PLACES_FROM


def test_a_stored_probes_hang_is_read_again_from_its_own_candidates_text(tmp_path: Path) -> None:
    """Read again, a probe's lines came from the folder as it is now: under run.preload one
    live folder holds the last candidate's files, so each stored place read that text;
    a candidate's own folder (candidates/KEY) holds its own, and where it is gone the
    text is unknown (no difference), not "" (another hang)."""
    from reprospec.minimize.hangplace import place_of
    from reprospec.minimize.probes import stored_source
    from tests.unit.minimize.test_hangplace import STUCK, _main_in_stuck

    folder, workdir = tmp_path / "minimize", tmp_path / "work"
    own = folder / "candidates" / "0123456789abcdef"
    own.mkdir(parents=True)
    (own / "h.py").write_text(STUCK, encoding="utf-8")
    (folder / "live").mkdir()
    (folder / "live" / "h.py").write_text(STUCK, encoding="utf-8")
    probe = StoredProbe("failing:0123456789abcdef", (), "failing", ("match",), "r")
    kept = stored_source(folder, workdir, live=False, workload=False)
    live = stored_source(folder, workdir, live=True, workload=False)
    in_own, in_live = (_main_in_stuck(str(f / "h.py"), 5) for f in (own, folder / "live"))
    assert place_of(in_own, source=kept(probe)) == "main -> stuck -> with"
    assert place_of(in_live, source=live(probe)) == ""  # the last candidate's text, not its own
    gone = replace(probe, key="failing:fedcba9876543210")
    assert (
        place_of(
            _main_in_stuck(str(own.with_name("fedcba9876543210") / "h.py"), 5), source=kept(gone)
        )
        == ""
    )


def test_candidates_time_out_at_ten_times_the_longest_attempt_that_ended(tmp_path: Path) -> None:
    """A candidate that lost the code stopping a thread hung to the spec's 300 s,
    where the original's attempts took 2 s; and a resumed search's first new probe (the
    hanging candidate Ctrl-C stopped) ran at 300 s again, its replayed probes unread."""
    import threading

    from reprospec.core.inputs import Cell
    from reprospec.core.runoptions import RunOptions
    from reprospec.isolation.state import StateFile, StoredProbe
    from reprospec.minimize.probes import ProbeRunner, _longest_attempt
    from reprospec.store.resultsjson import write_run
    from tests.support.runs import hang_run

    def runner(timeout_s: float | None, hang: bool = False) -> ProbeRunner:
        return ProbeRunner(
            spec_path=tmp_path / "spec.yaml", overrides=(), options=RunOptions(),
            failing=Cell(id="default", index=0, matrix={}), passing=(), workdir=tmp_path,
            folder=tmp_path / "m", as_list=False, state=StateFile(tmp_path / "m", {}),
            cancel=threading.Event(), parallel=1, timeout_s=timeout_s, hang=hang,
        )  # fmt: skip

    crash = runner(300.0)
    assert crash.candidate_timeout("failing") is None  # nothing has ended yet
    crash.longest["failing"] = 2.0
    assert crash.candidate_timeout("failing") == 20.0
    # A passing cell's probes go by the passing cells' attempts alone: one that trains
    # for a minute is no 10x of a failing cell that crashes at once.
    assert crash.candidate_timeout("passing") is None
    crash.longest["failing"] = 0.5
    assert crash.candidate_timeout("failing") == 10.0  # the floor
    crash.longest["failing"] = 40.0
    assert crash.candidate_timeout("failing") is None  # 400 s: the spec's own is shorter
    hung = runner(300.0, hang=True)
    hung.longest["failing"] = 2.0
    assert hung.candidate_timeout("failing") is None  # a hang is judged by its timeout
    # A stored probe's runs: the pass's 0.8 s, not the hangs' 5 s.
    run = hang_run()
    write_run(tmp_path / "runs" / run.run_id, run)
    probe = StoredProbe(key="failing:k", candidate=(), role="failing", kinds=(), run_id=run.run_id)
    assert _longest_attempt(probe, tmp_path / "runs") == 0.8
    assert _longest_attempt(replace(probe, run_id="gone"), tmp_path / "runs") == 0.0


def test_an_attempt_that_hung_is_a_hang_of_its_kind_and_counted_as_failing_otherwise() -> None:
    # A hang was "other" like an error exit, so a refusal could not tell whether to name the
    # timeout: isolate's and minimize's kinds say it, and a tally counts it both ways.
    from reprospec.isolation import driver
    from reprospec.isolation.candidates import Tally
    from reprospec.minimize import probes

    hang = AttemptResult(1, 0.1, Outcome(kind="hang", signature="hang"), False, (), "cells/1")
    error = AttemptResult(2, 0.1, Outcome(kind="error", signature="error:exit-1"), False, (), "")
    assert [driver._kind(a) for a in (hang, error)] == ["hang", "other"]
    assert [probes._kind(a, None, "failing") for a in (hang, error)] == ["hang", "other"]
    tally = Tally().add(["hang", "other"])
    assert (tally.other, tally.hung, tally.clean) == (2, 1, 2)


def test_the_pace_is_of_rounds_at_j_and_quotes_the_budget_left(tmp_path: Path) -> None:
    """k attempts at -j j ran in ceil(k/j) rounds: 1 attempt of 1.3 s at -j 2 is 0.7 s an
    attempt (one of a round of 2), not 1.3 s, and the budget left (not the whole) is what
    is quoted. A state that holds probes (a resume) says no pace at all."""
    import threading

    from reprospec.core.inputs import Cell
    from reprospec.core.runoptions import RunOptions
    from reprospec.isolation.candidates import AttemptKind
    from reprospec.minimize.probes import ProbeRunner

    said: list[str] = []

    def runner(budget: int, parallel: int, folder: str) -> ProbeRunner:
        return ProbeRunner(
            spec_path=tmp_path / "spec.yaml", overrides=(), options=RunOptions(),
            failing=Cell(id="default", index=0, matrix={}), passing=(), workdir=tmp_path,
            folder=tmp_path / folder, as_list=False, state=StateFile(tmp_path / folder, {}),
            cancel=threading.Event(), parallel=parallel, say=said.append, budget=budget,
        )  # fmt: skip

    def probe(attempts: int) -> StoredProbe:
        kinds: tuple[AttemptKind, ...] = tuple("match" for _ in range(attempts))
        return StoredProbe(key="failing:k", candidate=(), role="failing", kinds=kinds, run_id="r")

    runner(200, 2, "a")._say_pace(probe(1), 1.3)
    assert said == [
        "1 attempt took 1.3s, 0.7s an attempt at -j 2: the 199 attempts left of the budget "
        "would take about 2m 10s at that pace"
    ]
    runner(33, 2, "b")._say_pace(probe(3), 6.0)  # 2 rounds of 3 s; 30 left, 15: 45 s
    assert len(said) == 1  # under a minute: not said
    runner(60, 4, "c")._say_pace(probe(4), 8.0)  # 1 round of 8 s; 56 left, 14: 1m 52s
    assert said[-1] == (
        "4 attempts took 8.0s, 2.0s an attempt at -j 4: the 56 attempts left of the budget "
        "would take about 1m 52s at that pace"
    )
    # Resumed: the state holds the earlier run's probes, and the pace is not said.
    StateFile(tmp_path / "d", {}).add(probe(2))
    resumed = runner(200, 2, "d")
    assert resumed.state.stored == 1
    resumed._say_pace(probe(1), 1.3)
    assert len(said) == 2
