"""bash's report of a job whose processes ended, read for where a pid stands in a pipeline.

`set -o pipefail; a | b | c` whose b died of SIGSEGV: bash exits 139 with b's status and
reports the job, one line per process, each after the first with the `|` before it:

    bash: line 1:  4048 Done                    a
          4049 Segmentation fault      (core dumped) | b
          4050                       | c

One rule for the outcome (outcome/children.py: a pipeline's later process's crash is a
child's, `where: child`) and for native stacks (native/capture.py `main_core`: its core is
not the main process's).
"""

from __future__ import annotations

from reprospec.core.lazyre import Lazy

# One line of bash's report of a job whose processes ended, a pipeline's after its first:
# `     4243 Segmentation fault      (core dumped) | python3 filter.py` (the `|` before
# each later process's command).
_PIPELINE_LINE = Lazy(r"^[ \t]+(?P<pid>\d+) [^\n|]*?[ \t]\| \S")
_JOB_LINE = Lazy(r"^(?:[^\n]*?: )?(?:line \d+: )?[ \t]*(?P<pid>\d+) \S")


def pipeline_stage(text: str, pid: int) -> int | None:
    """Where bash's report of `pid`'s death lists it in a pipeline (`set -o pipefail; a | b
    | c`, whose status is the last that failed): 0 its first process, 1 the next, ...; None
    where the report lists it alone (no pipeline) or not at all.

    The first process is the command's program (`python train.py 2>&1 | tee log.txt`): its
    death is the main process's crash, as the shell's 128+N says. A later one (`seq 1 9 |
    ./filter | cat`'s filter) is a child the pipeline fed, whose status the shell took: its
    crash is that child's (docs/spec-format.md, rule 4; `a_pipelines_child`)."""
    if "| " not in text:
        return None  # no pipeline in bash's words
    lines = text.splitlines()
    for index, line in enumerate(lines):
        found = _JOB_LINE.match(line)
        if found is None or int(found["pid"]) != pid:
            continue
        # The job's block: its first line (the shell's `line N:` prefix), then one indented
        # line per process; a pipeline's later processes each begin with `| `.
        start = index
        while (
            start > 0 and _PIPELINE_LINE.match(lines[start]) and _JOB_LINE.match(lines[start - 1])
        ):
            start -= 1
        end = index + 1
        while end < len(lines) and _PIPELINE_LINE.match(lines[end]):
            end += 1
        if end - start > 1:
            return index - start
    return None


def a_pipelines_child(text: str, pid: int) -> bool:
    """Whether bash's report lists `pid`'s death as a pipeline's process after its first:
    a child of the command, not its program (`pipeline_stage`)."""
    stage = pipeline_stage(text, pid)
    return stage is not None and stage > 0


__all__ = ["a_pipelines_child", "pipeline_stage"]
