"""`reprospec slurm SPEC --shards N`: a Slurm job array of shards, then a merge job.

reprospec slurm SPEC --shards N [--gpus-per-shard K] [--partition P] [--time T]
               [--sbatch-arg ARG]... [--dry-run] [--out SHARED] [run options]
reprospec slurm status RUN [--format json]
reprospec slurm resume RUN [--time T]        (also: reprospec slurm RUN --resume)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import shutil
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from reprospec.commands import options as opt
from reprospec.core.words import agree, noun, plural
from reprospec.errors import EXIT_INFRA, EXIT_OK, FatalError, InfraError, UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from reprospec.core.inputs import AttemptPlan, Spec
    from reprospec.core.runoptions import RunOptions
    from reprospec.core.safepoint import Deferral
    from reprospec.slurm import RunStatus, SlurmRun


def add_parser(sub: argparse._SubParsersAction[opt.P]) -> None:
    """The `slurm` verb's arguments; the run options are `run`'s, repeated by every shard."""
    p = sub.add_parser("slurm", help="run a spec as a Slurm job array of shards, then merge")
    opt.selection(p)
    p.add_argument(
        "target",
        metavar="SPEC|status|resume",
        help="a spec to submit; or `status RUN`, `resume RUN` of a submitted run",
    )
    p.add_argument(
        "run_ref",
        nargs="?",
        metavar="RUN",
        help="with status or resume: the run folder under SHARED/slurm/, or its id",
    )
    p.add_argument("--shards", type=opt.positive, default=None, metavar="N", help="array tasks")
    p.add_argument(
        "--gpus-per-shard",
        type=int,
        default=0,
        metavar="K",
        help="GRES gpu:K per task (default 0: none)",
    )
    p.add_argument(
        "--cpus-per-shard",
        type=opt.positive,
        default=None,
        metavar="C",
        help="default: -j, else Slurm's",
    )
    p.add_argument("--partition", default=None, metavar="P", help="the Slurm partition")
    p.add_argument(
        "--time", type=opt.slurm_time, default=None, metavar="T", help="per task, Slurm's format"
    )
    p.add_argument(
        "--sbatch-arg",
        action="append",
        default=[],
        dest="sbatch_args",
        metavar="ARG",
        help="passed to both sbatch calls, e.g. --sbatch-arg=--account=lab (repeatable)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the scripts, submit nothing")
    p.add_argument("--resume", action="store_true", help="resubmit the missing shards of RUN")
    opt.text_or_json(p, help="status: text (default) or json")
    opt.out(
        p,
        metavar="SHARED",
        help="a folder every node sees (default: .reprospec; the run folder goes under "
        "SHARED/slurm/)",
    )
    opt.runner(
        p,
        choices=("local", "docker", "venv"),
        help="each shard's runner (default: local), as `run --runner`; venv builds the "
        "environments here, into SHARED/envs (or $REPROSPEC_ENVS), which every shard reuses",
    )
    opt.python(p, help="each shard's interpreter, as `run --python`")
    opt.repeat(p, help="attempts per cell, as `run --repeat`")
    opt.timeout(
        p, help="per attempt, as `run --timeout` (not the Slurm time limit: that is --time)"
    )
    opt.jobs(p, help="attempts at once in a shard (default: the spec's run.parallel, else 1)")
    opt.find_links(p, help="venv and docker runners: a wheelhouse, as `run`")


# What `status` and `resume` read of the options: a resubmitted shard keeps the rest as
# slurm.json holds them (the spec's split, its run options, sbatch's).
_TAKES = {"status": ("out", "format"), "resume": ("out", "time")}


def _refuse_unused(args: argparse.Namespace, verb: str) -> None:
    """Refuse, exit 2, the options `slurm status` or `slurm resume` would not use: they
    were dropped without a word, `resume RUN --dry-run` submitted, `resume RUN --timeout
    10m` sent its shards with the old timeout."""
    verbs = argparse.ArgumentParser().add_subparsers()
    add_parser(verbs)
    own = verbs.choices["slurm"]
    defaults = own.parse_args(["x"])
    given = {
        action.dest: "/".join(action.option_strings)
        for action in own._actions
        if action.option_strings
        and action.dest not in (*_TAKES[verb], "help", "resume")
        and getattr(args, action.dest, None) != getattr(defaults, action.dest)
    }
    if not given:
        return
    takes = " and ".join(f"--{dest}" for dest in _TAKES[verb])
    why = (
        "its shards are sent again with the options the run was submitted with (slurm.json): "
        "submit the spec again for others; `slurm status RUN` says which shards it would send"
        if verb == "resume"
        else "it reads the run as it is"
    )
    raise UsageError(f"slurm {verb} takes only {takes}, not {', '.join(given.values())}: {why}")


def run(args: argparse.Namespace) -> int:
    target: str = args.target
    ref: str | None = args.run_ref
    if target in ("status", "resume") and ref is not None:
        _refuse_unused(args, target)
        return _status(args, ref) if target == "status" else _resume(args, ref)
    if target in ("status", "resume") and not Path(target).exists():
        # Read as a SPEC named `status`, it said `slurm SPEC needs --shards N`, or with
        # --shards `status: no such file`: neither named the RUN it lacked.
        raise UsageError(
            f"slurm {target} needs RUN: the run folder under SHARED/slurm/, or its id "
            f"(`reprospec slurm {target} RUN --out SHARED`; the ids are the folders of "
            f"{args.out / 'slurm'})"
        )
    if ref is not None:
        raise UsageError(
            f"slurm takes one SPEC, or `status RUN`, or `resume RUN` (got {target} {ref})"
        )
    if args.resume:
        _refuse_unused(args, "resume")
        return _resume(args, target)
    return _submit(args, target)


def _submit(args: argparse.Namespace, spec_ref: str) -> int:
    from reprospec import api
    from reprospec.commands.interrupt import install_stop_handlers
    from reprospec.core.safepoint import Deferral
    from reprospec.slurm import (
        LookupWait,
        ShardArgs,
        SlurmOptions,
        SubmissionUnconfirmed,
        array_argv,
        array_script,
        attempts_per_shard,
        merge_argv,
        merge_script,
        new_run,
        save,
        submit,
        write_scripts,
    )

    if args.shards is None:
        raise UsageError("slurm SPEC needs --shards N (the number of array tasks)")
    if not args.dry_run:
        # Its scripts and the shards' runs go under --out: one that cannot be made said
        # `No such file or directory: /proc/x`, naming no option. A dry run
        # writes nothing there.
        opt.check_writable("--out", args.out)
    if args.gpus_per_shard < 0:
        raise UsageError(f"--gpus-per-shard must be 0 or more, got {args.gpus_per_shard}")
    # Validate and plan here, on the login node: a bad spec or option fails now, located,
    # not N times in N task logs; and we know how many attempts each shard holds.
    options = opt.run_options(args, purpose="slurm")
    from reprospec.plan.run import refuse_adaptive_shards
    from reprospec.venvs import envs_folder

    envs = envs_folder(args.out) if options.runner == "venv" else None
    # What every shard repeats, as given (a shard reads them as `run` does).
    shard_args = ShardArgs(
        runner=options.runner,
        python=options.python,
        matrix=options.matrix_filters,
        overrides=options.overrides,
        repeat=options.repeat,
        timeout=args.timeout,
        jobs=options.jobs,
        find_links=str(options.find_links) if options.find_links else None,
        envs=str(envs) if envs is not None else None,
    )
    spec = api.load_spec(spec_ref, options.overrides)
    planned = api.plan_run(spec, options)
    # Refused here as `run --shard` refuses it: else every array task exits 2 and the
    # merge job finds no shard.
    refuse_adaptive_shards(f"--shards {args.shards}", planned.adaptive, planned.expectations)
    plans = planned.attempts
    total = len(plans)
    if args.shards > total:
        raise UsageError(
            f"--shards {args.shards}: the spec plans only {plural(total, 'attempt')} "
            f"(cells x repeat), so at most --shards {total}"
        )
    run = new_run(
        spec.origin or spec.path,
        spec.name,
        args.out,
        SlurmOptions(
            shards=args.shards,
            gpus_per_shard=args.gpus_per_shard,
            cpus_per_shard=args.cpus_per_shard or args.jobs,
            partition=args.partition,
            time=args.time,
            sbatch_args=tuple(args.sbatch_args),
        ),
        shard_args,
        attempts_per_shard(total, args.shards),
    )
    cancel = threading.Event()
    # Begun from the submission on (below): a stop then waits until slurm.json records it.
    deferral = Deferral()
    wait = LookupWait(_said_of_stop)
    if not args.dry_run or options.runner == "local":
        # Known here, not in N task logs: cells whose packages the shards' runner cannot
        # give them (a dry run builds no environment: it writes nothing).
        # SIGTERM and SIGHUP stop it as Ctrl-C does: the venv runner's uv builds in a
        # session of its own, which only that stop ends (venvs/build.py); they killed the
        # verb outright and left uv and its package builds running on the login node.
        install_stop_handlers(cancel, deferral, raised_writes=False, heard=wait.heard)
        _preflight(spec, plans.firsts(), options, args.out)
    if args.dry_run:
        if envs is not None:
            print(f"# the venv runner's environments: built into {envs} before submitting")
        print(f"# {run.run_dir}/array.sbatch")
        print(array_script(run))
        print(f"# {run.run_dir}/merge.sbatch")
        print(merge_script(run))
        print("# would submit:")
        print("#   " + " ".join(array_argv(run)))
        print("#   " + " ".join(merge_argv(run, "<array job>")))
        return EXIT_OK
    # The folders above the run's that it makes (`--out new/shared`, SHARED/slurm): a run
    # sbatch refuses leaves none of them, where an empty SHARED/slurm stayed.
    made = [path for path in reversed(run.run_dir.parents) if not path.exists()]
    write_scripts(run)
    save(run)
    with _recorded_first(cancel, deferral):
        try:
            run = submit(run, say=_say, wait=wait)
        except SubmissionUnconfirmed as exc:
            # An sbatch that timed out, its job not in squeue: slurmctld may queue it yet,
            # and its shards would run into a removed folder (their output lost, unseen).
            raise InfraError(f"{exc}; the run folder is kept: {run.run_dir}") from None
        except InfraError:
            # Nothing was submitted (sbatch refused the array, or the merge, whose array it
            # then cancelled): the folder stayed, `slurm status` listed it `never
            # submitted`, and its `resume` submitted the same refused options again, the
            # only ones it keeps.
            shutil.rmtree(run.run_dir, ignore_errors=True)
            for path in reversed(made):
                with contextlib.suppress(OSError):
                    path.rmdir()
            raise
    sub = run.submissions[-1]
    print(
        f"submitted {run.spec_name}: array job {sub.array_job} ({plural(run.shards, 'shard')}, "
        f"{plural(total, 'attempt')}), merge job {sub.merge_job} after it"
    )
    _print_follow(run, sub.array_job, sub.merge_job)
    if cancel.is_set():
        raise KeyboardInterrupt  # (submitted and recorded: what the lines above say)
    return EXIT_OK


def _say(line: str) -> None:
    """What `submit` tells of a job found in squeue after its sbatch timed out."""
    print(f"warning: {line}", file=sys.stderr)


def _said_of_stop(line: str) -> None:
    """What a stop while `submit` looks a job up in squeue is told (LookupWait)."""
    print(f"reprospec: {line}", file=sys.stderr)


@contextlib.contextmanager
def _recorded_first(cancel: threading.Event, deferral: Deferral) -> Iterator[None]:
    """Around a `submit` (the first, a resume's): a stop (Ctrl-C, SIGTERM, SIGHUP) is
    `cancel` alone, obeyed once slurm.json records what was submitted (the caller raises it
    after printing the jobs): one raised after the array's sbatch and before that save left
    the array queued and the run `never submitted` (or a resume's shards `missing`), which
    `resume` submitted again. One that came before it submits nothing."""
    deferral.begin()
    try:
        if cancel.is_set():
            raise KeyboardInterrupt  # (came before the submission: nothing is submitted)
        yield
    finally:
        deferral.end()


def _preflight(
    spec: Spec, firsts: Sequence[AttemptPlan], options: RunOptions, shared: Path
) -> None:
    """Refuse a spec no cell of which the shards' runner could run (its packages), and say
    which cells of another it could not: each would only be an infra-error in a task log.
    `firsts`: attempt 1 of every cell."""
    from reprospec.environment.interpreter import python3_version
    from reprospec.runners.local import resolve_python
    from reprospec.slurm.preflight import build_venvs, check_local, describe
    from reprospec.venvs import envs_folder

    python = resolve_python(options.python)
    if options.runner != "docker":
        # As `run --python` refuses it (exit 3), before N tasks each exit 3 with it: one
        # missing, and one there that does not run or is no Python 3 (a file that was
        # there passed, and every shard was infra-error with it).
        try:
            python3_version(python)
        except InfraError as exc:
            raise InfraError(
                f"not submitted: {exc} (--python): every shard would exit 3 with it. Give "
                "the path of an interpreter the nodes see at the same path as this one"
            ) from exc
    if options.runner == "local":
        found = check_local(firsts, options)
        hint = (
            "--runner venv builds each cell's environment once, here, into "
            f"{envs_folder(shared)}, which every shard reuses; or install them into "
            "the shards' interpreter, or give --python PATH of one that has them "
            "(`reprospec doctor SPEC` checks)"
        )
        error: type[FatalError] = UsageError
    elif options.runner == "venv":
        found = build_venvs(firsts, options, envs_folder(shared), spec.base_dir)
        hint = "fix the packages (or the index: --find-links DIR, uv's configuration)"
        error = InfraError
    else:
        return  # docker installs each cell's packages into its image, on the node
    if not found.refused:
        return
    why = "; ".join(describe(each) for each in found.refused)
    if found.none_can_run:
        raise error(
            f"not submitted: on the {options.runner} runner every cell of {spec.name} would be "
            f"an infra-error, never run: {why}. {hint[0].upper()}{hint[1:]}"
        )
    print(
        f"warning: on the {options.runner} runner these cells will be infra-error, not run: {why}",
        file=sys.stderr,
    )


def _print_follow(run: SlurmRun, array_job: str, merge_job: str) -> None:
    first = min(run.submissions[-1].shards or (1,))
    # Commands to paste: a path with a space or a quote quoted.
    quoted = shlex.quote
    print(f"run folder: {run.run_dir}")
    print("follow it:")
    print(f"  reprospec slurm status {quoted(str(run.run_dir))}")
    print(f"  squeue -j {','.join(j for j in (array_job, merge_job) if j)}")
    if array_job:
        print(f"  tail -f {quoted(str(run.shard_log(first, array_job)))}")
    print(f"report, once merged: {run.run_dir}/merged/runs/<id>/report.md")
    # SHARED/slurm/<id>: history and report find the merged run under SHARED too.
    print(f"  (listed by: reprospec history --out {quoted(str(run.run_dir.parent.parent))})")


def _status(args: argparse.Namespace, ref: str) -> int:
    from reprospec.slurm import load, run_status, status_to_dict

    status = run_status(load(ref, args.out))
    if args.format == "json":
        print(json.dumps(status_to_dict(status), indent=2))
    else:
        _print_status(status)
    bad = status.missing or status.merge.state == "failed"
    return EXIT_INFRA if bad else EXIT_OK


def _print_status(status: RunStatus) -> None:
    run = status.run
    print(f"{run.run_id}: {run.spec_name}, {plural(run.shards, 'shard')}  ({run.run_dir})")
    width = len(str(run.shards))
    for s in status.shards:
        progress = f"{s.attempts_started}/{s.attempts_planned} attempts"
        job = f"job {s.job}" if s.job else ""
        print(
            f"  shard {s.shard:>{width}}/{run.shards}  {s.state:<8} {progress:<16} {job:<12} "
            f"{s.detail}"
        )
        if s.state in ("died", "failed") and s.log is not None:
            print(f"  {'':>{width * 2 + 7}}log: {s.log}")
    merge = status.merge
    print(
        f"  merge{'':>{width * 2 + 2}} {merge.state:<8} {'':<16} "
        f"{'job ' + merge.job if merge.job else '':<12} {merge.detail}"
    )
    if merge.report is not None:
        print(f"report: {merge.report}")
    for warning in status.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if status.missing:
        shards = ", ".join(str(k) for k in status.missing)
        have = agree(len(status.missing), "has", "have")
        # A spec changed since: resume sends tasks that each refuse it (it said resume).
        again = _resume_refusal(run) or f"reprospec slurm resume {shlex.quote(str(run.run_dir))}"
        print(f"{noun(len(status.missing), 'shard')} {shards} {have} no complete results: {again}")
    elif merge.state == "failed" and status.all_done:
        # Exit 3 with every shard done and no next step said (a merge job cancelled).
        print(
            "every shard has its results, the merge failed: reprospec slurm resume "
            f"{shlex.quote(str(run.run_dir))} submits it again"
        )


def _resume_refusal(run: SlurmRun) -> str | None:
    """Why resending this run's shards cannot work, said with what to do instead: its spec
    file changed or was removed since it was planned, which every task sent again refuses
    (exit 2 in each task's log, and the merge then finds them missing again)."""
    from reprospec.slurm import spec_changed

    changed = spec_changed(run)
    if changed is None:
        return None
    return (
        f"{run.spec} {changed} since reprospec slurm planned run {run.run_id}: every shard "
        f"sent again would refuse it; submit the spec again (reprospec slurm SPEC --shards "
        f"{run.shards} --out {shlex.quote(str(run.run_dir.parent.parent))}), or put it back "
        "as it was, then resume"
    )


def _unrecorded_jobs(run: SlurmRun) -> list[str]:
    """The user's jobs of the run's own scripts still queued or running that slurm.json
    does not record (squeue's, asked once for both scripts; none where it does not
    answer)."""
    from reprospec.slurm import ARRAY_SCRIPT, MERGE_SCRIPT, jobs_of_scripts

    known = {job for sub in run.submissions for job in (sub.array_job, sub.merge_job)}
    scripts = [str(run.run_dir / script) for script in (ARRAY_SCRIPT, MERGE_SCRIPT)]
    found = jobs_of_scripts(scripts) or []
    return [job.job for job in found if job.active and job.job not in known]


def _resume(args: argparse.Namespace, ref: str) -> int:
    from reprospec.commands.interrupt import install_stop_handlers
    from reprospec.core.safepoint import Deferral
    from reprospec.slurm import (
        LookupWait,
        forget_killed_attempts,
        load,
        run_status,
        set_aside_unresumable,
        submit,
    )

    # As the first submission's (_submit): a stop while it submits waits for slurm.json.
    cancel = threading.Event()
    deferral = Deferral()
    wait = LookupWait(_said_of_stop)
    install_stop_handlers(cancel, deferral, raised_writes=False, heard=wait.heard)
    run = load(ref, args.out)
    status = run_status(run)
    if status.active:
        active = [s for s in status.shards if s.shard in status.active]
        busy = ", ".join(f"{s.shard} ({s.state}, job {s.job})" for s in active)
        raise UsageError(
            f"{noun(len(active), 'shard')} {busy} {agree(len(active), 'is', 'are')} still in "
            f"Slurm: wait for {agree(len(active), 'it', 'them')} (or scancel), then resume"
        )
    if unrecorded := _unrecorded_jobs(run):
        # An sbatch that timed out (its job queued all the same, after the lookup), or one
        # by hand: its shards would run twice, into the same folders.
        jobs = ", ".join(unrecorded)
        raise UsageError(
            f"{noun(len(unrecorded), 'job')} {jobs} of this run's scripts "
            f"{agree(len(unrecorded), 'is', 'are')} in Slurm, not recorded in slurm.json (an "
            f"sbatch that timed out?): wait for {agree(len(unrecorded), 'it', 'them')} (or "
            "scancel), then resume"
        )
    missing = status.missing
    if missing and (refusal := _resume_refusal(run)) is not None:
        raise UsageError(f"not resubmitted: {refusal}")
    if not missing:
        if status.merge.state == "done":
            print(f"nothing to resume: every shard finished and merged: {status.merge.report}")
            return EXIT_OK
        if status.merge.state in ("queued", "running"):
            print(f"nothing to resume: the merge job {status.merge.job} is {status.merge.state}")
            return EXIT_OK
        with _recorded_first(cancel, deferral):
            run = submit(run, merge_only=True, say=_say, wait=wait)
        sub = run.submissions[-1]
        print(f"every shard has its results: submitted merge job {sub.merge_job}")
        _print_follow(run, "", sub.merge_job)
        if cancel.is_set():
            raise KeyboardInterrupt  # (submitted and recorded)
        return EXIT_OK
    for shard in missing:
        moved = set_aside_unresumable(run, shard)
        if moved is not None:
            print(
                f"shard {shard}: its run never reached the store; set aside in {moved}",
                file=sys.stderr,
            )
            continue
        for cell_id, number in forget_killed_attempts(run, shard):
            print(
                f"shard {shard}: {cell_id} attempt {number} ended when Slurm killed the "
                "shard: it runs again",
                file=sys.stderr,
            )
    with _recorded_first(cancel, deferral):
        run = submit(run, missing, time=args.time, say=_say, wait=wait)
    sub = run.submissions[-1]
    print(
        f"resubmitted {noun(len(missing), 'shard')} {', '.join(str(k) for k in missing)} of "
        f"{run.shards}: array job {sub.array_job}, merge job {sub.merge_job} after it"
    )
    _print_follow(run, sub.array_job, sub.merge_job)
    if cancel.is_set():
        raise KeyboardInterrupt  # (submitted and recorded)
    return EXIT_OK
