"""The verify: the written spec run again, as another person's shell would run it.

A capture that says `reproduced` must mean that the spec alone reproduces. The local
runner hands its attempts this process's environment, so a rerun in the capturing shell
would inherit what the spec does not carry (`USE_NATIVE=1`, set there and written
nowhere, gave `reproduced` for a spec that passed anywhere else). The rerun leaves out the
shell's own variables (`footprint.shell_only`: all but this machine's PATH, HOME, locale
and the like); when the failure comes back with them and not without, the one it needs
(or the few together) is narrowed to by reruns (narrowing.py) and written into
`environment.env`.

It runs in a copy of the spec's tree (export/tree.py: the spec and the files a bundle
carries, in a new folder outside the workdir), as someone given the bundle would run it.
A rerun in the workdir itself had everything the command read there at hand, and said
`reproduced` for a spec whose bundle failed elsewhere on a file its `files` lacked.
When the failure comes back in the workdir and not in the copy, the copy's rerun says
what it looked for there (its imports and the files it opened, recorded as capture's first
run records them, and the files its output names: `cat: data.txt: No such file or
directory`): those of the workdir's files are added to `files`, and the copy is made and
run again.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from reprospec import native
from reprospec.capture.alsoseen import came_back
from reprospec.capture.footprint import (
    HIDE_INSTALLS_VAR,
    INTERPRETER_PREFIX,
    RECORD_IMPORTS_VAR,
    RELEVANT_NOT_NEEDED,
    RELEVANT_UNTESTED,
    RELEVANT_UNTOLD,
    LocalInstall,
    needed_comment,
    needed_lines,
    shell_only,
)
from reprospec.capture.hangwait import VerifyWait
from reprospec.capture.narrowing import Needed, most_reruns, narrow
from reprospec.capture.writer import (
    CONTROL_AXIS,
    CONTROL_EMPTY,
    Control,
    Draft,
    control_axis,
    render_spec,
)
from reprospec.core import environ
from reprospec.core.frozen import frozen
from reprospec.core.logtext import printable
from reprospec.core.results import AttemptResult, CellResult, RunResult
from reprospec.core.words import crash_beside_pass, plural
from reprospec.spec.matrix import RESERVED, render_value


class Runner(Protocol):
    """How capture runs a spec (the CLI's live progress): (spec, repeat, observe, wait) ->
    the run; `wait`: a verify's of a captured hang (its run.stall, said before it runs).
    `shown`: the spec capture wrote, where `spec` is a copy of it (verify's rerun of a
    copy, run_captured's); only verify has one, so the observing runs leave it out."""

    def __call__(
        self,
        spec: Path,
        repeat: int,
        observe: bool,
        wait: VerifyWait | None,
        /,
        *,
        shown: Path | None = None,
    ) -> RunResult: ...


# (the run in a copy, the workdir's copy) -> the workdir's files it imported, ran or read,
# relative to the workdir (datafiles.WorkdirFiles.reads).
Reads = Callable[[RunResult, Path], tuple[str, ...]]


class Stopped(KeyboardInterrupt):
    """Ctrl-C or SIGTERM in the verify's reruns, with what they had shown (`lines`): a stop
    while narrowing the shell's variables left a spec that sets none of them, and said only
    that it was "not verified", though the failure had not come back without them (in a
    copy, then in the workdir): sent on, the spec missed everywhere but this shell."""

    def __init__(self, lines: tuple[str, ...]) -> None:
        super().__init__()
        self.lines = lines


@frozen
class Rerun:
    """One rerun of the written spec: did the observed failure come back, as `expect` says."""

    result: RunResult
    attempts: tuple[AttemptResult, ...]
    same: int  # attempts whose signature is the observed one's
    verdicts: str
    verified: bool
    # A rerun in a copy of the spec's tree: how many files the copy carried, and the
    # workdir's files the rerun looked for that the copy did not have.
    copied: int | None = None
    lacking: tuple[str, ...] = ()
    linked: tuple[str, ...] = ()  # linked into the copy, not copied (and not carried)
    # The control cell's attempts (writer.Control), and whether it passed as expected.
    control: tuple[AttemptResult, ...] = ()
    controlled: bool = False
    back: bool = False  # the failure came back as `expect` says, in its cells (not the control's)


# Copies of the spec rerun, each with the files the one before lacked, at most.
FILE_ROUNDS = 4


def verify(
    run_spec: Runner,
    spec_path: Path,
    draft: Draft,
    signature: str,
    repeat: int,
    *,
    workdir: Path,
    reads: Reads,
    linked: Sequence[str] = (),
    outside: Sequence[str] = (),
    undecodable: Sequence[str] = (),
    hidden: Sequence[LocalInstall] = (),
    wait: VerifyWait | None = None,
    again: str = "",
    say: Callable[[str], None] | None = None,
    written: Callable[[], Sequence[str]] = tuple,
) -> tuple[tuple[str, ...], bool]:
    """Rerun the spec at `spec_path` (written from `draft`, run in `workdir`) in a copy of
    its tree without the shell's own variables; rewritten with the variables and the files
    the failure needs when it comes back in the workdir itself and not so. What to say, and
    whether the failure came back as `expect` says. `hidden`: the editable installs of the
    workdir's project, which the copy's runs do not see (`HIDE_INSTALLS_VAR`). `wait`: how
    long a verify attempt waits for a captured hang (hangwait.py), said after. `outside`:
    the files the first run read outside the workdir (absolute paths), named where the
    failure came back in the workdir and not in the copy; `undecodable`, the workdir's
    files it read whose names are not UTF-8, likewise. `again`: the
    capture command with more attempts, given where the failure may be flaky. `say`: where
    a line of progress goes before the reruns that narrow the shell's variables (the CLI's
    stderr), since each is a whole rerun and they can take minutes. `written`: the
    workdir's files the runs wrote (datafiles.written_since), named where the failure did
    not come back in the workdir: a program that fails only without what an earlier run
    left (a checkpoint it resumes from) did not fail again there.

    A cause is written only where a rerun as the first run ran (the workdir, the shell's
    variables) brought the failure back: one that missed there is a failure that comes and
    goes, and narrowing by reruns that mostly miss by chance "found" six of the shell's
    variables (a container's name, CA paths) a 25% crash was said to need.
    Likewise a set narrowing ended on must bring it back when set: where it does not, in
    the copy nor in the workdir, none of it is shown needed and the spec sets none."""
    own = shell_only(os.environ, (line.name for line in draft.env))
    hide = _hidden(hidden)

    def check(kept: Iterable[str] = (), *, copy: bool = False) -> Rerun:
        keep = set(kept)
        left_out = [n for n in own if n not in keep]
        if not copy:
            return _rerun(run_spec, spec_path, repeat, signature, left_out, wait)
        return _rerun_copied(
            run_spec, spec_path, workdir, repeat, signature, left_out, reads, linked, hide, wait
        )

    lines: list[str] = []
    after: list[str] = []  # why the verify line's rerun missed
    done = check(copy=True)
    needed: tuple[str, ...] = ()
    ran_with: tuple[str, ...] = ()  # the shell's variables `done` ran with
    if not done.verified:
        here = check()
        came_back_here = here.verified
        # The rerun as the first run ran: without the shell's variables where it has none.
        as_first = here if not own or came_back_here else check(own)
        # A pass: the reruns without the shell's variables crashed or erred. A flaky
        # program does that by chance, and narrowing by its one-attempt reruns then wrote
        # a variable "the failure needs" that the pass never needed: a
        # variable the pass needs fails it without, every time, so the rerun without
        # them is made once more and must miss again before any is narrowed to.
        settled = signature != "pass" or came_back_here or not as_first.verified
        if not settled and check().verified:
            after.append(_flaky_pass(again))
        elif not as_first.verified:
            after.append(_flaky(as_first, again, written()))
        elif not came_back_here:
            named = named_in(own, _program_files(draft, workdir, spec_path.parent))
            if say is not None:
                say(narrowing_line(len(own), repeat, passed=signature == "pass", named=named))
            reruns = [0]
            most = most_reruns(len(own), named=len(named))
            # Each narrowing rerun by what it kept: one without the variables found that
            # passed is what a control cell stands on (`_control`).
            ran: list[tuple[frozenset[str], Rerun]] = [(frozenset(), here)]

            def kept_run(kept: Sequence[str]) -> bool:
                rerun = check(kept)
                ran.append((frozenset(kept), rerun))
                return rerun.verified

            def trial(kept: Sequence[str]) -> bool:
                # Each rerun said with what it keeps: 16 of them read `verifying spec.yaml
                # (10 attempts)` alike, over 6 minutes, nothing telling them apart.
                reruns[0] += 1
                if say is not None:
                    say(rerun_line(reruns[0], most, kept, len(own)))
                return kept_run(kept)

            try:
                found = narrow(own, trial, named=named)
                # Needed only if it does not come back without them: made once more without
                # them (the others set, the spec not yet setting them), a failure that comes
                # back (or a pass that still passes) is a flaky program's chance that
                # narrowing took for their need; so is a rerun that kept them all and missed
                # (four CA-path variables "needed" by a 50%
                # crash).
                why = _not_shown_needed(found, own, signature, kept_run)
            except KeyboardInterrupt:
                raise Stopped((_stopped_narrowing(len(own), signature),)) from None
            if why:
                after.append(
                    _passed_without(found, again)
                    if signature == "pass"
                    else _not_needed(found, why, again)
                )
            else:
                plain = draft
                draft = replace(
                    draft,
                    env=(
                        *draft.env,
                        *needed_lines(os.environ, found.names, found.minimal, _subject(signature)),
                    ),
                )
                if as_first is not here:
                    ran.append((frozenset(own), as_first))  # with them all: it came back
                control, no_control = _control(draft, found, signature, ran, again)
                control, no_control = _loaded(spec_path, draft, control, no_control)
                draft = replace(draft, control=control)
                spec_path.write_text(render_spec(draft), encoding="utf-8")
                ran_with = found.names
                done = check(found.names, copy=True)
                # Whether the failure came back: its cells, not the control's (below).
                if done.back or check(found.names).back:
                    needed = found.names
                    lines.append(_needs(found, _subject(signature)))
                    if control is not None and not done.back:
                        # The copy's failing cell missed beside the control: an attempt with
                        # them set not chosen for coming back, which the rate must count.
                        ran.append((frozenset(found.names), done))
                        beside = sum(1 for a in done.control if same_as(a, "pass"))
                        control, no_control = _control(draft, found, signature, ran, again, beside)
                        if control is None:
                            draft = replace(draft, control=None)
                            spec_path.write_text(render_spec(draft), encoding="utf-8")
                            done = check(found.names, copy=True)
                    if no_control:
                        after.append(no_control)
                    came_back_here = True  # it came back with them, in the copy or the workdir
                else:
                    # Not shown needed: with them set it came back nowhere.
                    draft = plain
                    spec_path.write_text(render_spec(draft), encoding="utf-8")
                    after.append(_unconfirmed(found, again))
        if not done.back and came_back_here:
            # It needs more of the workdir than the copy carried. A program stops at the
            # first file missing (its config), so the next one (the data the config
            # names) shows in the next copy's run: a few rounds, while each finds more.
            added: list[str] = []
            for _ in range(FILE_ROUNDS):
                lacking = [f for f in done.lacking if f not in draft.files]
                if not lacking:
                    break
                added += lacking
                draft = replace(draft, files=tuple(sorted({*draft.files, *lacking})))
                spec_path.write_text(render_spec(draft), encoding="utf-8")
                done = check(needed, copy=True)
                if done.back:
                    break
            if added:
                them = "it" if len(added) == 1 else "them"
                lines.append(
                    f"the failure needs {_names(added)} of the workdir: it came back there, "
                    f"not in a copy of the spec without {them}, and the spec now lists "
                    f"{them} (files)"
                )
            if not done.back and not added and here.verified and here.same < len(here.attempts):
                # Flaky: one rerun each side is no evidence of a cause; "needs more of the
                # workdir" sent a person looking for a file that did not exist.
                after.append(
                    "it came back in the workdir in "
                    f"{here.same}/{plural(len(here.attempts), 'attempt')}"
                    ", not in a copy of the spec, which lacked no file capture saw "
                    "the command read: a failure that comes and goes can miss every attempt "
                    "of one rerun by chance; " + _capture_again(again, "a larger --repeat to tell")
                )
            elif not done.back and not added and len(done.attempts) == 1 and not check(needed).back:
                # One attempt each side, and the workdir's rerun, made again unchanged,
                # missed: a failure that comes and goes, not a file the copy lacked (a
                # file the workdir has brings it back there every time).
                after.append(
                    "it came back in the workdir once, not in a copy of the spec, which "
                    "lacked no file capture saw the command read, and not in the workdir "
                    "again: the failure may be flaky, coming back only sometimes, so no file "
                    "is named as its cause; " + _capture_again(again)
                )
            elif not done.back and outside:
                # Read by a path relative to the workdir (`../shared/data.csv`): the copy,
                # elsewhere, lacks it there, and no `files` entry may leave the workdir. An
                # absolute path reaches the same file from the copy. "capture did not see
                # it read; name it in files" sent a person looking for a file it had named.
                places = [os.path.relpath(path, workdir) for path in outside]
                them = "it" if len(places) == 1 else "them"
                after.append(
                    "it came back in the workdir, but not in a copy of the spec and the "
                    f"{plural(done.copied or 0, 'file')} it carries: the command read "
                    f"{_names(places)} outside the workdir, which no spec or bundle carries, "
                    f"and a copy elsewhere lacks {them} where a path relative to the workdir "
                    f"reaches {them}: move {them} into the workdir (and `files`), or have the "
                    f"program read {them} by {'its' if len(places) == 1 else 'their'} "
                    "absolute path"
                )
            elif not done.back and undecodable:
                # "name it in the spec's files" could not be done: no spec holds the name.
                names = ", ".join(printable(name, one_line=True) for name in undecodable)
                after.append(
                    "it came back in the workdir, but not in a copy of the spec and the "
                    f"{plural(done.copied or 0, 'file')} it carries: the command read {names}, "
                    "whose name is not UTF-8, which no spec can name or carry: rename it (and "
                    "the command's use of it) and capture again"
                )
            elif not done.back:
                after.append(
                    "it came back in the workdir, but not in a copy of the spec and the "
                    f"{plural(done.copied or 0, 'file')} it carries: the command needs more of the "
                    "workdir than capture saw it read (a file the program only tests for, such as "
                    "os.path.exists, and what a program other than Python reads are not "
                    "seen); name it in the spec's `files`"
                )
    if draft.control is not None and not done.controlled:
        # Seen passing without them, but not as the spec writes it (empty, in a copy of
        # the tree): no control cell is better than one that fails.
        after.append(_no_control(draft.control.names, done))
        draft = replace(draft, control=None)
        spec_path.write_text(render_spec(draft), encoding="utf-8")
        done = check(needed, copy=True)
    # Not the interpreter's own PYTHON* knobs: PYTHONUNBUFFERED alone changes when a hang's
    # progress reaches the engine (its signature with it), and a hang's rerun waits its
    # whole timeout; they stay "not tested".
    relevant = tuple(
        line.name
        for line in draft.env
        if line.comment == RELEVANT_UNTESTED and not line.name.startswith(INTERPRETER_PREFIX)
    )
    if done.verified and signature != "pass" and relevant:
        # The relevant variables the spec writes as the shell set them were in every rerun
        # above: OMP_NUM_THREADS=4, a hang's whole cause, was written "not shown needed".
        base = [n for n in own if n not in needed]
        tests = [0]
        tested: list[tuple[frozenset[str], Rerun]] = []  # a control cell's evidence

        def kept_only(kept: Sequence[str]) -> bool:
            """The copy rerun with only `kept` of them (the spec's lines and the shell's)."""
            tests[0] += 1
            if say is not None:
                shown = f" ({_names(kept)})" if kept else ""
                say(
                    f"reprospec: testing your shell's relevant variables, rerun {tests[0]}: "
                    f"with {len(kept)} of the {len(relevant)}{shown}"
                )
            trial = replace(
                draft, env=tuple(x for x in draft.env if x.name not in relevant or x.name in kept)
            )
            spec_path.write_text(render_spec(trial), encoding="utf-8")
            left = [*base, *(n for n in relevant if n not in kept)]
            rerun = _rerun_copied(
                run_spec, spec_path, workdir, repeat, signature, left, reads, linked, hide, wait
            )
            tested.append((frozenset(kept), rerun))
            return rerun.verified

        if say is not None:
            say(relevant_line(relevant, repeat))
        try:
            draft, said, found_relevant = _relevant(draft, relevant, kept_only, again)
        finally:
            # Each rerun wrote the spec without some of them: a stop (Ctrl-C) mid-way
            # leaves it whole, as the verify ran it.
            spec_path.write_text(render_spec(draft), encoding="utf-8")
        control = None
        if found_relevant is not None and draft.control is None:
            # The verify's rerun, with them all set as the shell sets them, is evidence too:
            # one variable is found needed by reruns without it alone.
            tested.append((frozenset(relevant), done))
            control, no_control = _control(draft, found_relevant, signature, tested, again)
            control, no_control = _loaded(spec_path, draft, control, no_control)
            if no_control:
                after.append(no_control)
        if control is not None and found_relevant is not None:
            # As for the shell's other variables: a control cell where a rerun without
            # them passed, kept on the verify's control cell's own result. The failing
            # cell missing that rerun is a flaky failure's chance (it came back in the
            # verify before), no reason to drop a control that passed.
            spec_path.write_text(render_spec(replace(draft, control=control)), encoding="utf-8")
            with_control = check(needed, copy=True)
            if with_control.controlled:
                draft = replace(draft, control=control)
                said = _needs(found_relevant) + (
                    f"; to see it vary, add values to matrix.{control_axis(control.names[0])}, "
                    "beside the control cell's"
                    if len(control.names) == 1
                    else ""
                )
                if with_control.back:
                    done = with_control
                else:
                    # The failing cell's miss is an attempt with them set that was not chosen
                    # for coming back: the rate it gives may make the passes no control.
                    tested.append((frozenset(relevant), with_control))
                    beside = sum(1 for a in with_control.control if same_as(a, "pass"))
                    again_control, why = _control(
                        draft, found_relevant, signature, tested, again, beside
                    )
                    if again_control is None:
                        draft = replace(draft, control=None)
                        spec_path.write_text(render_spec(draft), encoding="utf-8")
                        said = _needs(found_relevant)  # (no control cell to vary beside)
                        after.append(why)
                    else:
                        after.append(_missed_beside_control(control.names, with_control, signature))
            else:
                spec_path.write_text(render_spec(draft), encoding="utf-8")
                after.append(_no_control(control.names, with_control))
        lines.append(said)
    left_out = [name for name in own if name not in ran_with]
    without = f" (without {_names(left_out)} of your shell)" if left_out else ""
    if hidden:
        # Said: the copy's runs imported the project from the copy, or failed saying so.
        without += (
            f" (your editable install of {_names([i.name for i in hidden])} hidden: the "
            "copy's files imported)"
        )
    # What else came back: "the same signature came back in 2/10" hid 6 segfaults.
    rest = came_back(done.attempts, signature)
    them = "it" if len(done.linked) == 1 else "them"
    links = f", {_names(done.linked)} linked (no bundle carries {them})" if done.linked else ""
    lines.append(
        f"verify in a copy of the spec and its {plural(done.copied or 0, 'file')}{links}{without}: "
        f"{'the same' if done.same else 'NOT the same'} signature "
        f"({signature}) came back in {done.same}/{plural(len(done.attempts), 'attempt')}"
        + _beside(done.attempts, signature)
        + (f" (the others: {rest})" if rest else "")
        + _unmatched(done.attempts, done.verified, came_back=done.same > 0)
        + _control_said(done, draft.control)
        + f"; verdict {done.verdicts} (run {done.result.run_id}, of the copy, since removed)"
    )
    if wait is not None:
        lines.append(wait.said())
    return (*lines, *after), done.verified


def _control(
    draft: Draft,
    found: Needed,
    signature: str,
    ran: Iterable[tuple[frozenset[str], Rerun]],
    again: str = "",
    control_passes: int = 0,
) -> tuple[Control | None, str]:
    """A control cell for the variables `found` (writer.Control), where a rerun without
    all of them passed: every attempt a clean pass; else None and the line that says why
    ('' for a captured pass: without them it failed, no pass to control). "Did not fail
    the same way" is no control: an error of another kind without them is a cell minimize
    cannot hold its candidates to. Nor is a variable written as anything but its value (a
    secret read back), an axis name the matrix has, keeps for itself (`include`) or no
    expression can read, or a value whose cell id is the control's (`'null'`): each made
    a spec the loader refused, and capture exit 2 on a spec it wrote itself.

    A flaky failure's chance is no control either: narrowing can end on unrelated
    variables whose one rerun without them passed by luck. The control stands where every
    attempt with them set failed (the failure looks steady), or where its passes were
    enough that a failure at the rate seen with them would have shown among them:
    (1 - rate)^passes < CONTROL_CHANCE."""
    names = found.names
    if signature == "pass" or not names:
        return None, ""
    values = {line.name: line.value for line in draft.env if not line.commented}
    axes = {axis.name for axis in draft.matrix} | {CONTROL_AXIS}
    shared = [n for n in names if [control_axis(m) for m in names].count(control_axis(n)) > 1]
    if shared:
        # (Mode and MODE: one axis `mode`, both lines reading it, the failing cell ran
        # MODE=a Mode=a where the shell set MODE=b, and the failure needing both missed)
        why = f"{_names(shared)} would share the matrix axis `{control_axis(shared[0])}`"
        return None, _no_control_why(names, why)
    for name in names:
        value, axis = values.get(name), control_axis(name)
        if not isinstance(value, str) or "${{" in value:
            why = f"the spec writes {name} by a reference, not its value, which no cell empties"
            return None, _no_control_why(names, why)
        if axis in RESERVED or axis in axes or not re.fullmatch(r"[a-z_][a-z0-9_]*", axis):
            said = "keeps for itself" if axis in RESERVED else "already has, or cannot read"
            why = f"{name}'s matrix axis would be `{axis}`, a name the matrix {said}"
            return None, _no_control_why(names, why)
        if len(names) == 1 and render_value(value) == render_value(None):
            why = f"{name}'s value `{value}` names its cell as the control's (`{axis}=null`)"
            return None, _no_control_why(names, why)
    runs = list(ran)
    without = [rerun for kept, rerun in runs if not kept & set(names) and rerun.attempts]
    passed = [r for r in without if all(same_as(a, "pass") for a in r.attempts)]
    if not passed:
        ended = ", ".join(
            dict.fromkeys(
                a.ran.signature if a.ran else "not run" for r in without for a in r.attempts
            )
        )
        why = f"no rerun without {_them(names)} passed" + (f" (it ended {ended})" if ended else "")
        return None, _no_control_why(names, why)
    with_them = [a for kept, rerun in runs if set(names) <= kept for a in rerun.attempts]
    failed = sum(1 for a in with_them if same_as(a, signature))
    # (`control_passes`: the verify's control cell's, with them empty, asked again once the
    # failing cell beside it missed)
    passes = sum(len(r.attempts) for r in passed) + control_passes
    if with_them and failed < len(with_them):
        rate = failed / len(with_them)
        if (1 - rate) ** passes >= CONTROL_CHANCE:
            why = (
                f"the failure came back in {failed}/{plural(len(with_them), 'attempt')} with "
                f"{_them(names)} set, and {plural(passes, 'attempt')} without passed: a failure "
                "that comes and goes at that rate misses that many by chance, so the passes "
                "are no control"
            )
            then = _capture_again(again, "a larger --repeat to tell")
            return None, _no_control_why(names, why, then)
    them = "it" if len(names) == 1 else "them"
    shown = names[0] if len(names) == 1 else _names(names)
    empty = "null" if len(names) == 1 else CONTROL_EMPTY
    control = Control(
        names,
        f"{empty}: {shown} empty, the control cell: the command passed without {them}",
    )
    return control, ""


# A control stands on passes a flaky failure at the rate seen would have failed in at
# least once but for this chance (`_control`).
CONTROL_CHANCE = 0.05


def _them(names: Sequence[str]) -> str:
    return "it" if len(names) == 1 else "them"


def _by_hand(names: Sequence[str]) -> str:
    """How to add a control cell by hand: unset, which an empty value is not to a program
    that tells them apart, or a value it reads as off."""
    unset = " ".join(f"-u {name}" for name in names)
    return (
        "add one by hand where it passes: a cell whose command starts "
        f"`env {unset}` (unset, not empty), or one setting {_them(names)} to a value the "
        "program reads as off"
    )


def _no_control_why(names: Sequence[str], why: str, then: str = "") -> str:
    """`no control cell (... empty): why`, and what to do: `then`, else how to add one by
    hand."""
    return (
        f"no control cell (the command with {_names(names)} empty): {why}; the spec has "
        "one failing cell, so minimize has no passing cell to hold its candidates to; "
        + (then or _by_hand(names))
    )


def _loaded(
    spec_path: Path, draft: Draft, control: Control | None, why: str
) -> tuple[Control | None, str]:
    """`control` where the spec with it loads (spec.load), else None and why: whatever
    `_control` did not foresee, a control that does not load is dropped, the one-cell
    spec written as before, never a spec capture wrote refused by `run` (exit 2)."""
    from reprospec.errors import SpecError
    from reprospec.spec.load import load_spec

    if control is None:
        return None, why
    spec_path.write_text(render_spec(replace(draft, control=control)), encoding="utf-8")
    try:
        load_spec(spec_path)
    except SpecError as exc:
        spec_path.write_text(render_spec(draft), encoding="utf-8")
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "it did not load"
        return None, _no_control_why(control.names, f"the spec with it did not load ({first})")
    return control, ""


def _no_control(names: Sequence[str], rerun: Rerun) -> str:
    """Why the spec has no control cell, though a rerun without `names` passed: the
    verify's control cell, with them empty, did not pass."""
    ended = ", ".join(
        dict.fromkeys(a.ran.signature if a.ran is not None else "not run" for a in rerun.control)
    )
    return (
        f"the command passed in a rerun without {_names(names)}, but a control cell with "
        f"{_them(names)} empty did not pass in the verify (it ended {ended}): the spec has no "
        "control cell, so minimize has no passing cell to hold its candidates to; "
        + _by_hand(names)
    )


def _missed_beside_control(names: Sequence[str], rerun: Rerun, signature: str) -> str:
    """The verify's rerun with the control cell: the control passed, the failing cell
    missed (a flaky failure, which came back in the verify before it). The control is
    kept: it stands on its own cell's result."""
    return (
        f"the control cell ({_names(names)} empty) passed in "
        f"{sum(1 for a in rerun.control if same_as(a, 'pass'))}/"
        f"{plural(len(rerun.control), 'attempt')} of a rerun of the spec with it, and is "
        f"kept; the failure ({signature}) missed that rerun's failing cell "
        f"({rerun.same}/{plural(len(rerun.attempts), 'attempt')}), as a failure that comes "
        "and goes does by chance (it came back in the verify before)"
    )


def _control_said(rerun: Rerun, control: Control | None) -> str:
    """`; the control cell (MLPKG_FUSED empty) passed in 1/1 attempt`: the verify line's
    word on the control cell, where the spec has one."""
    if control is None or not rerun.control:
        return ""
    passed = sum(1 for a in rerun.control if same_as(a, "pass"))
    return (
        f"; the control cell ({_names(control.names)} empty) passed in "
        f"{passed}/{plural(len(rerun.control), 'attempt')}"
    )


def _rerun_copied(
    run_spec: Runner,
    spec_path: Path,
    workdir: Path,
    repeat: int,
    signature: str,
    left_out: Sequence[str],
    reads: Reads,
    linked: Sequence[str],
    hide: str = "",
    wait: VerifyWait | None = None,
) -> Rerun:
    """`_rerun` of a copy of the spec's tree, made in a new folder outside the workdir
    (a program that looks up its folders for a config must not find the workdir's) and
    removed after, with the imports and reads recorded: `lacking` is what of the workdir
    it looked for there and did not find. `hide`: HIDE_INSTALLS_VAR's value, when the
    workdir's project has editable installs to hide from the copy's runs."""
    from reprospec.core.runoptions import RunOptions
    from reprospec.export.bundle import MAX_FILE_BYTES
    from reprospec.export.tree import copy_tree, spec_tree
    from reprospec.plan.run import plan_run
    from reprospec.plan.workfiles import environments
    from reprospec.spec.load import load_spec

    spec = load_spec(spec_path)
    plan = plan_run(spec, RunOptions())
    tree = spec_tree(spec_path, spec.document, plan.attempts, max_file_bytes=MAX_FILE_BYTES)
    # Linked, not copied: what the first run read and no bundle carries (a 20 MiB
    # checkpoint, a dot-file), and environments made in the workdir (the command's
    # `.venv/bin/python`): this machine's, which a reader has their own of.
    made = environments(workdir)
    links = [workdir / name for name in linked] + made
    names = [*linked, *(p.name + "/" for p in made)]
    names += [tree.place(p) for p in tree.too_large]
    with tempfile.TemporaryDirectory(
        prefix="reprospec-verify-", ignore_cleanup_errors=True
    ) as scratch:
        # A few empty folders above the copy: a path the program reads relative to the
        # workdir and out of it (`../shared/data.csv`) reaches nothing in the copy, where at
        # the scratch folder's top it reached the temporary folder's own neighbours
        # (`/tmp/shared/data.csv`), another program's file.
        dest = Path(scratch, *_ABOVE_THE_COPY)
        dest.mkdir(parents=True)
        copied_spec = copy_tree(tree, dest, linked=links)
        copied_workdir = dest / tree.place(workdir)
        with environ.changed({RECORD_IMPORTS_VAR: "1", HIDE_INSTALLS_VAR: hide or None}):
            rerun = _rerun(
                run_spec, copied_spec, repeat, signature, left_out, wait, shown=spec_path
            )
        lacking = tuple(
            f for f in reads(rerun.result, copied_workdir) if not (copied_workdir / f).exists()
        )
    return replace(rerun, copied=len(tree.files), lacking=lacking, linked=tuple(names))


# How deep the copy sits in its scratch folder: `../` as many times stays inside it.
_ABOVE_THE_COPY = ("outside",) * 6 + ("copy",)


def _rerun(
    run_spec: Runner,
    spec_path: Path,
    repeat: int,
    signature: str,
    left_out: Sequence[str],
    wait: VerifyWait | None = None,
    *,
    shown: Path | None = None,
) -> Rerun:
    """Rerun the spec with the variables `left_out` unset (this process's environment is
    what the local runner hands its attempts), then put them back. `shown`: the spec the
    run names where `spec_path` is a copy of it, removed once it ends (the spec capture
    wrote, which `report latest` then shows in place of a folder that is gone)."""
    with environ.changed(dict.fromkeys(left_out)):
        result = run_spec(spec_path, repeat, False, wait, shown=shown)
    # A control cell (expected to pass where the failure is not a pass) is counted apart:
    # its passes are not "the same signature" coming back, nor its attempts the failure's.
    controls: list[CellResult] = []
    failing: list[CellResult] = []
    for cell in result.cells:
        is_control = signature != "pass" and cell.expected.outcome == "pass"
        (controls if is_control else failing).append(cell)
    again = tuple(a for cell in failing for a in cell.attempts)
    same = sum(1 for a in again if same_as(a, signature))
    verified = same > 0 and all(cell.verdict == "reproduced" for cell in result.cells)
    verdicts = ", ".join(sorted({cell.verdict for cell in result.cells}))
    control = tuple(a for cell in controls for a in cell.attempts)
    controlled = bool(controls) and all(cell.verdict == "reproduced" for cell in controls)
    back = same > 0 and all(cell.verdict == "reproduced" for cell in failing)
    return Rerun(
        result, again, same, verdicts, verified, control=control, controlled=controlled, back=back
    )


def narrowing_line(count: int, repeat: int, passed: bool = False, named: Sequence[str] = ()) -> str:
    """What the narrowing is about to do, said before it (13 variables at
    --repeat 6 took 9 minutes with nothing but each rerun's attempts said). After it, the
    spec reruns with those it ends on, in the copy and then the workdir, and a pass once
    more without them first (`passed`): up to 3, where the line said "one or two". One variable
    needs no narrowing: without it is the empty set, known."""
    most = most_reruns(count, named=len(named))
    after = 3 if passed else 2
    if not most:
        return (
            f"reprospec: the failure came back with your shell's variable set and not without "
            f"it: checking that it needs it, by at most {after} reruns of the spec, each of "
            f"{plural(repeat, 'attempt')}"
        )
    first = (
        f", the first with only {_names(named)}, which the program's files name"
        if 0 < len(named) < count
        else ""
    )
    return (
        f"reprospec: the failure came back with your shell's {count} variables set and not "
        f"without them: finding which it needs, by at most {plural(most, 'rerun')} of the spec "
        f"with some left out{first}, each of {plural(repeat, 'attempt')}, then at most {after} "
        f"with those it ends on"
    )


# A file of the program read for the variables it names: at most this much of it, and of a
# folder in `files`, at most this many files.
_READ_BYTES = 1 << 20
_FOLDER_FILES = 32


def rerun_line(number: int, most: int, kept: Sequence[str], count: int) -> str:
    """`reprospec: narrowing, rerun 3 of at most 24: with 4 of your shell's 17 variables
    (ALPHA_B, ...)`, said before each rerun of the narrowing."""
    with_ = f"with {len(kept)} of your shell's {count} variables"
    return f"reprospec: narrowing, rerun {number} of at most {most}: {with_}" + (
        f" ({_names(kept)})" if kept else ""
    )


def relevant_line(names: Sequence[str], repeat: int) -> str:
    """What testing the spec's relevant variables is about to do (each step a whole rerun)."""
    them = "it" if len(names) == 1 else "them"
    return (
        f"reprospec: the failure came back with the spec as written: checking whether it needs "
        f"{_names(names)} as your shell sets {them}, by a rerun without {them} (more where "
        f"it does not come back), each of {plural(repeat, 'attempt')}"
    )


def _relevant(
    draft: Draft, names: Sequence[str], comes_back: Callable[[Sequence[str]], bool], again: str
) -> tuple[Draft, str, Needed | None]:
    """`draft` with each of the relevant variables `names` (ENV_PREFIXES: OMP_*, CUDA_*, ...)
    said as the reruns found it, the line that says so, and those found needed (None where
    none is shown needed). `comes_back(kept)`: the failure
    came back in a rerun with only `kept` of them. The failure needs a variable only where
    it did not come back without it, made once more (`_not_shown_needed`), as for the
    shell's other variables; where it came back without them all, none is needed."""
    if comes_back(()):
        said = (
            f"the failure came back without {_names(names)} of your shell ({len(names)}): "
            "none of them is needed; the spec still sets them as your shell does"
        )
        return _commented(draft, names, (), RELEVANT_NOT_NEEDED), said, None
    found = Needed(tuple(names), True, 0) if len(names) == 1 else narrow(names, comes_back)
    why = _not_shown_needed(found, names, "failure", comes_back)
    if why:
        said = (
            f"it did not come back once without {_names(names)} of your shell, but {why}: "
            "the reruns could not tell which it needs (a failure that comes and goes misses "
            "reruns by chance); the spec sets them all as your shell does; " + _capture_again(again)
        )
        return _commented(draft, names, (), RELEVANT_UNTOLD), said, None
    vary = found.names[0]
    said = (
        _needs(found)
        + f"; to see it vary, run the spec with a matrix over it, as `matrix: {{{_axis(vary)}: "
        f"[...]}}` and `{vary}: ${{{{ matrix.{_axis(vary)} }}}}` in environment.env"
    )
    comment = needed_comment(found.minimal, len(found.names))
    return _commented(draft, names, found.names, RELEVANT_NOT_NEEDED, comment), said, found


def _axis(name: str) -> str:
    """A matrix axis for a variable: `OMP_NUM_THREADS` -> `omp_num_threads`."""
    return name.lower()


def _commented(
    draft: Draft,
    names: Sequence[str],
    needed: Sequence[str],
    others: str,
    comment: str = "",
) -> Draft:
    """`draft` with the lines of `names` commented: `comment` on `needed`, `others` else."""
    return replace(
        draft,
        env=tuple(
            line
            if line.name not in names
            else replace(line, comment=comment if line.name in needed else others)
            for line in draft.env
        ),
    )


def _program_files(draft: Draft, workdir: Path, spec_dir: Path) -> list[Path]:
    """The program's own files: the spec's `files` and the command's words that are files
    of the workdir (its script, `tests/test_x.py`), a folder's first files."""
    import shlex

    try:
        words = shlex.split(draft.command)
    except ValueError:
        words = draft.command.split()
    paths: list[Path] = []
    for name in (*draft.files, *words):
        if not name or name.startswith("-") or "${{" in name:
            continue
        for base in (workdir, spec_dir):
            path = base / name
            if path.is_file():
                paths.append(path)
                break
            if path.is_dir():
                paths += [p for p in sorted(path.rglob("*")) if p.is_file()][:_FOLDER_FILES]
                break
    return paths


def named_in(names: Sequence[str], files: Iterable[Path]) -> tuple[str, ...]:
    """Those of the shell's variables `names` that the program's `files` name as a whole
    word (`os.environ.get("TINYQ_FAST")`, `$USE_NATIVE`, `getenv("X")`): the ones narrowing
    tries alone first (narrowing.py)."""
    import re

    text = ""
    for path in files:
        try:
            with path.open("rb") as handle:
                text += handle.read(_READ_BYTES).decode("utf-8", "replace") + "\n"
        except OSError:
            continue
    return tuple(
        name
        for name in names
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text)
    )


def same_as(attempt: AttemptResult, signature: str) -> bool:
    """Whether a rerun's attempt ended as capture's first run did (`signature`): its
    signature, and for a pass, no process of it dead of a signal beside it. A pass over a
    crash is not the clean pass capture saw (its own such pass is refused, with nothing
    written: command.refusal), and "the same signature (pass) came back" said nothing of
    the crash."""
    if not native.attempt_agrees(attempt, signature):
        return False
    return signature != "pass" or crash_beside_pass(attempt) is None


def _stopped_narrowing(count: int, signature: str) -> str:
    """What a stop while narrowing the shell's variables leaves known (`Stopped`)."""
    them, which = ("variable", "it") if count == 1 else (f"{count} variables", "some of them")
    return (
        f"{_subject(signature)} came back with your shell's {them} set and not without"
        f" {'it' if count == 1 else 'them'}, so it needs {which}; the narrowing that finds"
        f" which was stopped, and the spec sets none: it may reproduce only in a shell that"
        f" sets {'it' if count == 1 else 'them'} as yours does; capture again to find"
        f" {'it' if count == 1 else 'them'}, or set {'it' if count == 1 else 'them'} in"
        " environment.env"
    )


def _subject(signature: str) -> str:
    """What the shell's variables are needed for: the failure capture saw, or, where the
    command passed, the pass (a variable without which it crashed is what the pass needs;
    "the failure needs it" named a failure that never was)."""
    return "the pass" if signature == "pass" else "the failure"


def _needs(found: Needed, subject: str = "the failure") -> str:
    """The line that says which of the shell's variables the spec now sets, and how sure
    that is: each needed (`found.minimal`), or one or more of them, not narrowed further
    (the reruns ran out), where "the failure needs" on each was false of most of them.
    `subject`: what needs them (`_subject`)."""
    names = found.names
    if found.minimal and len(names) == 1:
        return (
            f"{subject} needs {names[0]} as your shell sets it: it did not come back "
            "without it, and the spec now sets it (environment.env)"
        )
    if found.minimal:
        return (
            f"{subject} needs {', '.join(names)} together as your shell sets them: it did "
            "not come back without any one of them, and the spec now sets them "
            "(environment.env)"
        )
    return (
        f"{subject} needs one or more of {_names(names)} ({len(names)}) as your shell sets "
        f"them: it came back with them and not without, and {found.reruns} reruns did not "
        "narrow it further; the spec sets them all (environment.env): remove those it does "
        "not need by hand"
    )


def _capture_again(again: str, more: str = "more attempts") -> str:
    """`capture again with more attempts: reprospec capture --repeat 20 ...`, the advice
    every flaky reading ends with; without the command where the caller has none."""
    return f"capture again with {more}" + (f": {again}" if again else "")


def _flaky(rerun: Rerun, again: str, written: Sequence[str] = ()) -> str:
    """That the failure did not come back in a rerun as the first run ran (the workdir, the
    shell's variables): it comes and goes, or something outside the spec changed; no
    variable or file is named as its cause. `written`: the workdir's files
    the runs wrote, which each rerun found there and the first run did not: "may be flaky,
    capture with --repeat 20" sent a person after a rate, where the program fails only
    without the checkpoint its first run left (nu-b ck)."""
    n = len(rerun.attempts)
    if rerun.same:
        # The failure came back; what missed is the written expect (a step, a message). "It
        # did not come back (0/6)" of a rerun whose 5 of 6 attempts crashed the same way sent
        # a person looking for flakiness, and the variable the failure needs went unwritten.
        misses = _unmatched(rerun.attempts, False, came_back=True)
        return (
            f"in the workdir, run as the first run ran, the same signature came back in "
            f"{rerun.same}/{plural(n, 'attempt')} (run {rerun.result.run_id}){misses}: edit the "
            "spec's expect to what the failure does each time; no variable or file is named "
            "as its cause"
        )
    left = ""
    if written:
        shown = ", ".join(written)
        left = (
            f"; the runs wrote {shown} in the workdir, which every rerun found there and the "
            "first run did not: where the failure needs them absent, capture a command "
            "that removes them first"
        )
    return (
        f"it did not come back in the workdir either, run as the first run ran "
        f"(0/{plural(n, 'attempt')}, run {rerun.result.run_id}): the failure may be flaky, "
        "coming back only sometimes, so no variable or file is named as its cause; "
        + _capture_again(again)
        + left
    )


def _flaky_pass(again: str) -> str:
    """That a pass capture saw failed in reruns without the shell's variables, then passed
    in one made again without them: the program fails only sometimes, whatever the shell
    sets, so no variable is named as what the pass needs."""
    return (
        "the command passed, but failed in reruns without your shell's variables, then "
        "passed in one made again without them: it may be flaky, failing only sometimes, so "
        "no variable is named as what the pass needs; " + _capture_again(again)
    )


def _passed_without(found: Needed, again: str) -> str:
    """That the variables narrowing ended on for a pass did not fail it when left out once
    more: the reruns that "showed" them needed crashed by chance."""
    names = found.names
    return (
        f"narrowing your shell's variables by reruns ended on {_names(names)} ({len(names)}) "
        "as what the pass needs, but a rerun without them, made once more, passed: none of "
        "them is shown needed and the spec sets none; the command may be flaky, failing "
        "only sometimes, so no variable is named as what the pass needs; " + _capture_again(again)
    )


def _not_shown_needed(
    found: Needed, own: Sequence[str], signature: str, comes_back: Callable[[Sequence[str]], bool]
) -> str:
    """Why the set narrowing ended on is not shown needed ('' where it is), by reruns made
    once more: it is needed only if the failure (or the pass) does not come back without
    it, and a failure's each variable only if it does not come back with that one left out,
    every time; nor may a rerun the narrowing made that kept them all have missed. One miss
    of a 50% crash with only the variable it reads kept three CA paths "the failure needs"
    beside it. A variable needed misses again: it cannot come back."""
    if found.contradicted:
        return "a rerun that kept them all did not bring it back"
    if comes_back([n for n in own if n not in found.names]):
        return "a rerun without them, made once more, brought it back"
    if signature == "pass":
        return ""
    for name in found.names:
        if comes_back([n for n in found.names if n != name]):
            return f"a rerun without {name} alone, made once more, brought it back"
    return ""


def _not_needed(found: Needed, why: str, again: str) -> str:
    """That the variables narrowing ended on are not shown needed, and `why`."""
    names = found.names
    return (
        f"narrowing your shell's variables by reruns ended on {_names(names)} ({len(names)}) "
        f"as what the failure needs, but {why}: none of them is shown needed and the spec "
        "sets none; the failure may be flaky, coming back only sometimes, so no variable is "
        "named as its cause; " + _capture_again(again)
    )


def _unconfirmed(found: Needed, again: str) -> str:
    """That the variables narrowing ended on did not bring the failure back when set: the
    reruns that dropped the others missed by chance, so none is shown needed."""
    names = found.names
    return (
        f"it came back once with your shell's variables, but not with {_names(names)} "
        f"({len(names)}), on which narrowing them by reruns ended, set, in a copy nor in the "
        "workdir: none of them is shown needed and the spec sets none (a failure that comes "
        "and goes misses reruns by chance); the failure may be flaky: " + _capture_again(again)
    )


def _hidden(installs: Sequence[LocalInstall]) -> str:
    """HIDE_INSTALLS_VAR's value for `installs` (the stackdump sitecustomize reads it): the
    folders they serve modules from and the top-level modules they serve; '' for none."""
    if not installs:
        return ""
    import json

    roots = [r for i in installs for r in i.roots]
    return json.dumps({"roots": roots, "modules": [m for i in installs for m in i.modules]})


def _names(names: Sequence[str], shown: int = 4) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _beside(attempts: Sequence[AttemptResult], signature: str) -> str:
    """` (1 of them passed, but a process died of SIGSEGV)`: why a rerun's passes were not
    the same as capture's clean pass (`same_as`), where the verdict still says reproduced."""
    if signature != "pass":
        return ""
    signals = [s for a in attempts if (s := crash_beside_pass(a)) is not None]
    if not signals:
        return ""
    return (
        f" ({len(signals)} of them passed, but a process died of "
        f"{', '.join(dict.fromkeys(signals))})"
    )


def _unmatched(attempts: Sequence[AttemptResult], verified: bool, *, came_back: bool) -> str:
    """What of the written `expect` the rerun's attempts missed, when the verdict is not
    `reproduced`: the same signature can come back while the spec still misses (a message
    pattern, a step), and the line must say which, not only that it missed. ", but" only
    when the signature did come back: "NOT the same ... came back in 0/1 attempt, but
    the spec's expect did not match" read as a contradiction."""
    if verified:
        return ""
    misses = list(dict.fromkeys(m for a in attempts if not a.matched for m in a.mismatches))
    if not misses:
        return ""
    more = f" (and {len(misses) - 1} more)" if len(misses) > 1 else ""
    joint = ", but" if came_back else ";"
    return f"{joint} the spec's expect did not match: {misses[0]}{more}"
