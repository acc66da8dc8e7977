"""The isolate state's replay: a probe answers with no more attempts than the search asks.

A rerun under a smaller budget than the stored run's asks for fewer attempts near its
end (its last round is cut to what the budget has left); replaying a stored probe whole
spent past the budget. The rest of that probe answers the next probe of the same
configuration."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from reprospec.errors import UsageError
from reprospec.isolation.state import StateFile, StoredProbe

HEADER = {"spec": "s", "failing": "f", "passing": "p"}


def stored(tmp_path: Path) -> StateFile:
    state = StateFile(tmp_path, HEADER)
    state.add(StoredProbe("full", (0, 1), "failing", ("pass", "pass", "match"), "run-1"))
    state.add(StoredProbe("half", (0,), "search", ("pass",), "run-2"))
    state.add(StoredProbe("full", (0, 1), "failing", ("match",), "run-3"))
    return StateFile(tmp_path, HEADER)  # as a rerun reads it


def test_a_probe_replays_at_most_the_attempts_asked_and_keeps_the_rest(tmp_path: Path) -> None:
    state = stored(tmp_path)
    assert state.stored == 3
    first = state.take("full", 2)
    assert first is not None
    assert (first.kinds, first.run_id) == (("pass", "pass"), "run-1")
    # The rest of that probe comes first for the same configuration, then the next one.
    rest = state.take("full", 5)
    assert rest is not None
    assert (rest.kinds, rest.run_id) == (("match",), "run-1")
    last = state.take("full", 5)
    assert last is not None
    assert (last.kinds, last.run_id) == (("match",), "run-3")
    assert state.take("full", 5) is None
    # Nothing of the file changed: the runs are still every stored probe's.
    assert state.runs() == ["run-1", "run-2", "run-3"]


def test_a_probe_stopped_before_any_attempt_is_not_counted_to_replay(tmp_path: Path) -> None:
    # Ctrl-C during a probe's first attempt stores it with no attempts: it replays nothing
    # (the search runs it again), so "continuing isolation ID: N probes to replay" must not
    # count it, where the answer said one fewer "replayed".
    state = StateFile(tmp_path, HEADER)
    state.add(StoredProbe("full", (0, 1), "failing", ("match",), "run-1"))
    state.add(StoredProbe("half", (0,), "search", (), "run-2", interrupted=True))
    assert StateFile(tmp_path, HEADER).stored == 1


def test_a_header_that_names_another_search_replays_nothing(tmp_path: Path) -> None:
    stored(tmp_path)
    other = StateFile(tmp_path, {**HEADER, "failing": "g"})
    assert other.stored == 0
    assert other.take("full", 5) is None


def test_a_probe_of_an_unknown_kind_is_a_damaged_file_not_a_shorter_probe(
    tmp_path: Path,
) -> None:
    # Dropped, the probe replayed 2 of its 3 attempts: the search asked again for one that
    # had run and read the rest in another order. Refused, named, as a damaged file is.
    import json

    import pytest

    from reprospec.errors import UsageError

    stored(tmp_path)
    path = tmp_path / "state.json"
    data = json.loads(path.read_text())
    data["probes"][0]["kinds"] = ["pass", "bogus", "match"]
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"state\.json: a damaged isolate state file .*'bogus'"):
        StateFile(tmp_path, HEADER)


def test_a_search_is_keyed_on_what_decides_a_probe_not_on_its_settings(tmp_path: Path) -> None:
    # isolate's, amplify's and minimize's folders: -j (like --budget, --error, --min-rate,
    # which never reach the run options) chooses which probes run, never what one does; the
    # timeout, the interpreter, the runner, the overrides and the program do.
    from reprospec.api import load_spec, plan_run
    from reprospec.core.runoptions import RunOptions
    from reprospec.core.words import budget_continues
    from reprospec.isolation.state import search_id

    (tmp_path / "app.py").write_text("raise SystemExit(3)\n")
    (tmp_path / "s.yaml").write_text(
        "reprospec: 1\nname: s\ncommand: python app.py\nexpect: {outcome: error}\n"
    )
    spec = load_spec(tmp_path / "s.yaml")

    def ident(options: RunOptions, question: str = "q") -> str:
        return search_id(spec, plan_run(spec, options).attempts, options, [question])

    base = ident(RunOptions())
    assert base.startswith("s-")
    assert ident(RunOptions(jobs=4)) == base
    for changed in (
        RunOptions(timeout_s=5),
        RunOptions(python="python3.11"),
        RunOptions(runner="venv"),
        RunOptions(overrides=("run.repeat=2",)),
        RunOptions(preload=("json",)),
        RunOptions(gpus="0"),
    ):
        assert ident(changed) != base, changed
    assert ident(RunOptions(), "another question") != base
    (tmp_path / "app.py").write_text("raise SystemExit(0)\n")  # the bug fixed
    assert ident(RunOptions()) != base
    assert budget_continues("bisect", 1) == (
        "a larger --budget continues this bisect: its 1 attempt is replayed, not run again"
    )


def test_a_search_is_keyed_on_the_values_of_the_variables_its_spec_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `MODE=b reprospec isolate` replayed the probes `MODE=a` ran: the spec's text, which
    # the key holds, reads ${{ env.MODE }} but not its value. Keyed under the store's key,
    # as compare's digests of secrets are; a variable the spec does not read is no key.
    from reprospec.api import load_spec, plan_run
    from reprospec.bisect.state import BisectRequest
    from reprospec.core.runoptions import RunOptions
    from reprospec.isolation.state import search_id

    (tmp_path / "s.yaml").write_text(
        "reprospec: 1\nname: s\ncommand: sh -c 'exit ${{ env.CODE }}'\nexpect: {outcome: error}\n"
    )
    spec = load_spec(tmp_path / "s.yaml")
    options = RunOptions(out=tmp_path / "out")
    bisect = BisectRequest(Path("s.yaml"), "pkg", "1.0", "2.0", out=tmp_path / "out")

    def ident() -> tuple[str, str]:
        """isolate's id and bisect's."""
        return search_id(spec, plan_run(spec, options).attempts, options, ["q"]), bisect.key(spec)

    monkeypatch.setenv("CODE", "3")
    three = ident()
    monkeypatch.setenv("UNREAD", "x")
    assert ident() == three
    monkeypatch.setenv("CODE", "0")
    zero = ident()
    monkeypatch.delenv("CODE")
    unset = ident()
    # Each moves: isolate's and bisect's.
    assert len({three[0], zero[0], unset[0]}) == len({three[1], zero[1], unset[1]}) == 3
    monkeypatch.setenv("CODE", "3")
    assert ident() == three
    assert (tmp_path / "out" / "digest.key").is_file()


# A command with no file of the workdir to digest: what it does depends on the folder it
# runs in (the file `code` there), which the program's digest cannot tell.
NO_PROGRAM = """\
reprospec: 1
name: s
command: python3 -c "import sys; sys.exit(int(open('code').read()))"
expect: {outcome: error, exit_code: 3}
"""


def test_a_search_is_keyed_on_the_spec_file_however_its_path_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One spec file is one key (isolate's, amplify's, minimize's and bisect's) from
    any folder, by any path; a copy of its text elsewhere, or a link to it from another
    folder (which runs it in that folder), is another. Isolate keyed on the file resolved
    alone shared its state with the link, bisect on the text alone with the copy."""
    from reprospec.api import load_spec, plan_run
    from reprospec.bisect.state import BisectRequest
    from reprospec.core.runoptions import RunOptions
    from reprospec.export.tree import program_digest
    from reprospec.isolation.state import search_id

    project, copy, linked = tmp_path / "proj", tmp_path / "copy", tmp_path / "linked"
    for folder, code in ((project, "3"), (copy, "0"), (linked, "0")):
        (folder / "specs").mkdir(parents=True)
        (folder / "specs" / "code").write_text(code)
    (project / "specs" / "x.yaml").write_text(NO_PROGRAM)
    (copy / "specs" / "x.yaml").write_text(NO_PROGRAM)
    (linked / "specs" / "x.yaml").symlink_to(project / "specs" / "x.yaml")
    request = BisectRequest(Path("x.yaml"), "pkg", "1.0", "2.0")

    def keys(cwd: Path, path: str) -> tuple[str, str]:
        """isolate's id and bisect's of the spec `path` names from `cwd`."""
        monkeypatch.chdir(cwd)
        spec = load_spec(path)
        attempts = plan_run(spec, RunOptions()).attempts.variants().attempts
        isolate = search_id(spec, attempts, RunOptions(), ["q"])
        return isolate, request.key(spec, program_digest(attempts))

    first = keys(project, "specs/x.yaml")
    assert keys(project, "./specs/x.yaml") == first
    assert keys(project / "specs", "x.yaml") == first
    assert keys(copy, "../proj/specs/x.yaml") == first
    assert keys(tmp_path, str(project / "specs" / "x.yaml")) == first
    for other in (keys(copy, "specs/x.yaml"), keys(linked, "specs/x.yaml")):
        assert other[0] != first[0]
        assert other[1] != first[1]


def test_each_attempts_exceptions_replay_beside_its_kind(tmp_path: Path) -> None:
    # minimize's point 7 reads them from the state on a resumed run: cut with the kinds.
    state = StateFile(tmp_path, HEADER)
    state.add(
        StoredProbe(
            "c", (), "failing", ("pass", "match"), "run-1",
            raised=((), ("AttributeError", "KeyError")),
        )
    )  # fmt: skip
    state.add(StoredProbe("old", (), "failing", ("match",), "run-2"))  # stored before them
    again = StateFile(tmp_path, HEADER)
    first = again.take("c", 1)
    rest = again.take("c", 1)
    assert first is not None
    assert rest is not None
    assert (first.kinds, first.raised) == (("pass",), ((),))
    assert (rest.kinds, rest.raised) == (("match",), (("AttributeError", "KeyError"),))
    old = again.take("old", 1)
    assert old is not None
    assert old.raised == ()


def test_each_attempts_hang_place_replays_beside_its_kind(tmp_path: Path) -> None:
    # minimize's hangs-elsewhere rule reads them from the state on a rerun: cut with the
    # kinds, and a list that does not match its kinds (a line edited by hand) read as none.
    state = StateFile(tmp_path, HEADER)
    state.add(StoredProbe("h", (), "failing", ("pass", "match"), "run-1", places=("", "w1, w2")))
    again = StateFile(tmp_path, HEADER)
    first, rest = again.take("h", 1), again.take("h", 1)
    assert first is not None
    assert rest is not None
    assert (first.kinds, first.places) == (("pass",), ("",))
    assert (rest.kinds, rest.places) == (("match",), ("w1, w2",))
    line = StoredProbe("x", (), "failing", ("match",), "r", places=("a",)).to_dict()
    assert StoredProbe.from_dict({**line, "places": ["a", "b"]}).places == ()


def test_an_earlier_versions_probes_are_read_again_before_they_replay(tmp_path: Path) -> None:
    # minimize's exceptions of a state an earlier version stored (stderr alone) were
    # compared with a candidate's read from both logs: the state says which logs it read,
    # and one that says none is given to the reader again, written back as it reads it.
    state = StateFile(tmp_path, HEADER)
    state.add(StoredProbe("a", (), "failing", ("match",), "run-1", raised=(("KeyError",),)))
    state.add(
        StoredProbe(
            "b", (), "failing", ("match",), "run-2",
            raised=(("ValueError",),), raised_from="stderr+stdout",
        )
    )  # fmt: skip
    again = StateFile(tmp_path, HEADER)

    def reread(probe: StoredProbe) -> StoredProbe:
        if probe.raised_from:
            return probe
        return StoredProbe(
            probe.key, (), probe.role, probe.kinds, probe.run_id,
            raised=(("KeyError", "OSError"),), raised_from="stderr+stdout",
        )  # fmt: skip

    assert again.reread(reread) == 1
    assert again.reread(reread) == 0
    taken = again.take("a", 1)
    assert taken is not None
    assert (taken.raised, taken.raised_from) == ((("KeyError", "OSError"),), "stderr+stdout")
    stored = StateFile(tmp_path, HEADER)  # written back
    assert stored.reread(reread) == 0
    kept = stored.take("b", 1)
    assert kept is not None
    assert kept.raised == (("ValueError",),)


def test_a_configurations_probes_are_numbered_after_each_other(tmp_path: Path) -> None:
    """Each probe's attempts follow the attempts the configuration's earlier probes used,
    where every probe began at 1 and drew the same seeds again; a probe that stopped at its
    first reproduction gives back the numbers it did not use."""
    state = StateFile(tmp_path, HEADER)
    assert state.first_attempt("full", 3) == 1
    assert state.first_attempt("half", 2) == 1  # another configuration: its own numbers
    state.add(StoredProbe("full", (0, 1), "failing", ("pass", "pass", "match"), "r1"))
    assert state.first_attempt("full", 3) == 4
    state.add(StoredProbe("full", (0, 1), "failing", ("match",), "r2", first_attempt=4))
    assert state.first_attempt("full", 2) == 5  # 5 and 6 were not drawn
    # Running beside another of the same configuration: each has numbers of its own.
    assert state.first_attempt("full", 2) == 7
    # A minimize recheck runs the failing probes' program again, numbered after them.
    assert state.first_attempt("failing:abc", 2) == 1
    assert state.first_attempt("recheck:abc", 2) == 3


def test_a_continued_search_numbers_after_the_probes_it_replays(tmp_path: Path) -> None:
    state = StateFile(tmp_path, HEADER)
    state.add(StoredProbe("full", (0, 1), "failing", ("pass", "pass"), "r1"))
    state.add(StoredProbe("full", (0, 1), "failing", ("match",) * 3, "r2", first_attempt=3))
    again = StateFile(tmp_path, HEADER)
    first = again.take("full", 1)
    assert first is not None
    assert (first.first_attempt, first.kinds) == (1, ("pass",))
    rest = again.take("full", 5)
    assert rest is not None
    assert (rest.first_attempt, rest.kinds) == (2, ("pass",))
    last = again.take("full", 5)
    assert last is not None
    assert last.first_attempt == 3
    assert again.take("full", 5) is None
    assert again.first_attempt("full", 4) == 6


def test_a_stored_probe_without_a_first_attempt_began_at_1() -> None:
    """A state stored before probes were numbered after each other: all began at 1."""
    data = StoredProbe("full", (0,), "failing", ("pass",), "r1", first_attempt=4).to_dict()
    assert StoredProbe.from_dict(data).first_attempt == 4
    del data["first_attempt"]
    assert StoredProbe.from_dict(data).first_attempt == 1
    with pytest.raises(ValueError, match="first attempt"):
        StoredProbe.from_dict({**data, "first_attempt": 0})


def test_a_probe_stopped_with_a_gap_in_its_attempts_numbers_after_the_last(
    tmp_path: Path,
) -> None:
    """Ctrl-C keeps the attempts that ended before the stop and sets aside one that ended
    after it: attempts 1 and 3 kept, 2 not. Stored as two attempts from 1, the next probe
    of the configuration began at 3 and drew 3's values again; the numbers are stored where
    they are not contiguous, and the next probe begins after the last one."""
    state = StateFile(tmp_path, HEADER)
    assert state.first_attempt("full", 3) == 1
    gap = StoredProbe(
        "full", (0, 1), "failing", ("pass", "match"), "r1", interrupted=True, numbers=(1, 3)
    )
    state.add(gap)
    assert state.first_attempt("full", 2) == 4
    assert StoredProbe.from_dict(gap.to_dict()) == gap
    plain = StoredProbe("full", (0, 1), "failing", ("pass",), "r2", first_attempt=4)
    assert "numbers" not in plain.to_dict()  # contiguous: the file says what it said
    # Given contiguous (the driver gives them always), they are not kept: one rule.
    given = replace(plain, numbers=(4,))
    assert given.numbers == ()
    assert given == plain
    assert "numbers" not in given.to_dict()
    with pytest.raises(ValueError, match="attempt numbers"):
        StoredProbe.from_dict({**gap.to_dict(), "numbers": [1]})
    # Replayed in a later run, in parts: each part keeps its own numbers.
    again = StateFile(tmp_path, HEADER)
    head = again.take("full", 1)
    assert head is not None
    assert (head.first_attempt, head.last_attempt, head.kinds) == (1, 1, ("pass",))
    tail = again.take("full", 5)
    assert tail is not None
    assert (tail.first_attempt, tail.last_attempt, tail.kinds) == (3, 3, ("match",))
    assert again.first_attempt("full", 1) == 4


def test_the_matrix_runs_attempts_are_not_drawn_again(tmp_path: Path) -> None:
    """isolate's run of the matrix picks the sides with each cell's attempt 1: a probe of
    a side's configuration begins after it."""
    state = StateFile(tmp_path, HEADER)
    state.drew("full", 1)
    assert state.first_attempt("full", 2) == 2
    assert state.first_attempt("half", 2) == 1


def test_a_probe_cut_short_and_not_stored_leaves_its_numbers_drawn(tmp_path: Path) -> None:
    """minimize stores no probe Ctrl-C cut short (the resumed search asks it again, whole):
    its numbers were forgotten, and the resumed probe numbered its attempts as the cut run
    had. They stay drawn, in the file too; a probe that never started leaves none."""
    state = StateFile(tmp_path, HEADER)
    assert state.first_attempt("failing:p", 1) == 1
    state.add(StoredProbe("failing:p", (), "failing", ("pass",), "r1"))
    assert state.first_attempt("failing:p", 3) == 2
    state.cut("failing:p", 2)
    state.cut("failing:p", 9)  # never numbered: nothing to keep
    again = StateFile(tmp_path, HEADER)
    assert again.take("failing:p", 5) is not None
    assert again.first_attempt("failing:p", 3) == 5
    assert again.first_attempt("recheck:p", 1) == 8  # a recheck draws the failing side's
    assert StateFile(tmp_path, {"other": "search"}).first_attempt("failing:p", 1) == 1
    data = json.loads((tmp_path / "state.json").read_text())
    assert data["cut"] == {"failing:p": 4}
    (tmp_path / "state.json").write_text(json.dumps({**data, "cut": {"failing:p": 0}}))
    with pytest.raises(UsageError, match="damaged"):
        StateFile(tmp_path, HEADER)


def test_a_state_that_could_not_run_keeps_its_cut_probes_numbers(tmp_path: Path) -> None:
    """A state of could-not-run probes is forgotten (held_state), but the numbers of a
    probe Ctrl-C cut short stay drawn: the whole file was removed, and the resumed search
    numbered from 1 again, as the cut run had."""
    from reprospec.isolation.state import forget_could_not_run

    state = StateFile(tmp_path, HEADER)
    assert state.first_attempt("failing:p", 3) == 1
    state.cut("failing:p", 1)
    state.add(StoredProbe("k", (), "failing", ("infra",), "r1", "command not found: segpy"))
    assert forget_could_not_run(tmp_path / "state.json", HEADER) == "command not found: segpy"
    again = StateFile(tmp_path, HEADER)
    assert again.stored == 0
    assert again.first_attempt("failing:p", 1) == 4


def test_probes_read_again_replay_where_the_state_cannot_be_written_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read-only --out: the state is read, never written, and a replay only prints.
    state = StateFile(tmp_path, HEADER)
    state.add(StoredProbe("a", (), "failing", ("match",), "run-1"))
    again = StateFile(tmp_path, HEADER)

    def read_only(path: Path, _text: object) -> None:
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr("reprospec.isolation.state.write_atomic", read_only)
    assert again.reread(lambda p: replace(p, run_id="run-2")) == 1
    taken = again.take("a", 1)
    assert taken is not None
    assert taken.run_id == "run-2"


@pytest.mark.parametrize(
    ("answer", "budget", "refused"),
    [
        ({"status": "interrupted", "attempts": 6, "budget": 40}, 6, ""),  # replays alone
        ({"status": "interrupted", "attempts": 6, "budget": 40}, 7, "(or --budget 6 to replay"),
        ({"interrupted": True, "used": 4, "budget": 40}, 3, ""),  # amplify's
        ({"interrupted": True, "used": 4, "budget": 40}, 40, "(or --budget 4 to replay"),
        ({"status": "interrupted"}, 1, "goes on from its interrupted run"),  # ran unknown
        ({"status": "refused", "budget_spent": True, "budget": 1}, 40, "--budget of 1,"),
        ({"status": "refused", "budget": 1}, 40, ""),  # refused whatever the budget
    ],
)
def test_an_unwritable_out_is_refused_only_where_the_search_would_run_new_attempts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answer: dict[str, object],
    budget: int,
    refused: str,
) -> None:
    from reprospec.isolation.state import check_out_to_go_on

    (tmp_path / "isolate.json").write_text(json.dumps(answer))
    monkeypatch.setattr("reprospec.isolation.state.unwritable", lambda _out: "Read-only")
    if not refused:
        check_out_to_go_on(tmp_path, tmp_path, "isolate.json", budget, "isolation X")
        return
    with pytest.raises(UsageError, match="cannot be written") as told:
        check_out_to_go_on(tmp_path, tmp_path, "isolate.json", budget, "isolation X")
    assert refused in str(told.value)


@pytest.mark.parametrize("budget", [1, 6, 40])
def test_an_interrupted_minimize_on_an_unwritable_out_is_refused_whatever_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """minimize's stored probes never hold the final check of its best (nor step 2, where it
    was stopped in step 1, `attempts` being step 1's): a --budget within the attempts it
    ran is no replay alone, so no --budget is suggested."""
    from reprospec.isolation.state import CannotGoOn, check_out_to_go_on

    (tmp_path / "minimize.json").write_text(
        json.dumps({"status": "interrupted", "attempts": 6, "budget": 40})
    )
    monkeypatch.setattr("reprospec.isolation.state.unwritable", lambda _out: "Read-only")
    with pytest.raises(CannotGoOn, match="goes on from its interrupted run") as told:
        check_out_to_go_on(tmp_path, tmp_path, "minimize.json", budget, "min X", replays=False)
    assert told.value.interrupted
    assert "--budget" not in str(told.value)


def test_a_refusal_says_whether_the_search_goes_on_from_an_interrupted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reprospec.isolation.state import CannotGoOn, check_out_to_go_on

    monkeypatch.setattr("reprospec.isolation.state.unwritable", lambda _out: "Read-only")
    (tmp_path / "isolate.json").write_text(json.dumps({"status": "budget", "budget": 3}))
    with pytest.raises(CannotGoOn) as larger:
        check_out_to_go_on(tmp_path, tmp_path, "isolate.json", 40, "isolation X")
    assert not larger.value.interrupted
    (tmp_path / "isolate.json").write_text(json.dumps({"status": "interrupted", "attempts": 2}))
    with pytest.raises(CannotGoOn) as stopped:
        check_out_to_go_on(tmp_path, tmp_path, "isolate.json", 40, "isolation X")
    assert stopped.value.interrupted
