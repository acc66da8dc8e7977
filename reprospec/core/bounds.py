"""How big a spec may be and how much it may ask for (docs/limits.md, "Input bounds").

Specs come from bug tickets: a stranger's file must be refused with a located
error, in bounded time and memory, before it can make the engine spin. Every
number here is documented in docs/limits.md; each is checked without building
the thing it bounds (the cell count is counted, not expanded).
"""

from __future__ import annotations

# Bytes of a spec file (or a report.md) read at all; past it the file is refused unread.
MAX_FILE_BYTES = 8 << 20
# Characters of YAML text parsed: the pure-Python parser costs ~20 us per token.
MAX_YAML_CHARS = 128 << 10
# Levels of nesting of YAML collections (aliases and merge keys count as levels).
MAX_YAML_DEPTH = 100
# YAML nodes visited, aliases counted each time they are used ("billion laughs").
MAX_YAML_NODES = 200_000

# Characters inside one `${{ }}`, and its levels of parentheses, lists, `not` and operators.
MAX_EXPRESSION_CHARS = 2000
MAX_EXPRESSION_DEPTH = 32

# Cells of a matrix, after exclude and include. A run plans each attempt as it starts and
# holds what its attempts left, a few KiB each (docs/performance.md, "Memory and the run
# folder as the matrix grows").
MAX_CELLS = 100_000
# Axes of a matrix (include-only keys not counted).
MAX_MATRIX_AXES = 64
# Entries of matrix.include and of matrix.exclude (each).
MAX_MATRIX_ENTRIES = 256
# Steps spent counting the cells that exclude leaves (a few per axis value in practice).
MAX_MATRIX_STEPS = 200_000
# Attempts per cell (run.repeat, run.max_repeat, --repeat).
MAX_REPEAT = 10_000
# The number of a run's first attempt (--first-attempt): a search's probes are numbered on
# from one another (at most a search's budget apart), far below it.
MAX_FIRST_ATTEMPT = 1_000_000
# Attempts a run may plan: cells x repeat (max_repeat for `repeat: auto`).
MAX_ATTEMPTS = 100_000
# Attempts run at once (run.parallel, -j).
MAX_PARALLEL = 256
# Copies of one attempt started together at a start barrier (run.instances).
MAX_INSTANCES = 256
# Ranks of a distributed workload (workload.distributed.world_size): one process each.
MAX_WORLD_SIZE = 256

# The smallest `environment.memory`: docker's own minimum for a container. Below it nothing
# starts: under about 1 MiB of address space the kernel kills the exec of the attempt's
# shell with SIGSEGV, under about 3 MiB the shell cannot map libc (exit 127), and those read
# as the program's own crash or error (`memory: 4096`, meant as MiB, judged a reproduced
# `crash SIGSEGV` of a program that never ran).
MIN_MEMORY = 6 << 20

# Characters of one output line that markers are matched against, and the time one
# marker may spend on one line before it is abandoned for the rest of the attempt.
MAX_MARKER_LINE_CHARS = 4096
MARKER_MATCH_TIMEOUT_S = 0.25


def count_within(value: object, most: int | None = None) -> int:
    """`value` as a count from 1 to `most` (no upper bound when None), else ValueError.

    The one wording of "not a usable count": the CLI's options (`--repeat`, `-j`, `--budget`)
    and a bundle's manifest are refused alike, so a number that `--repeat` refuses is
    refused in a bundle.json too.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    if value < 1:
        raise ValueError(f"expected a number >= 1, got {value}")
    if most is not None and value > most:
        raise ValueError(f"expected a number from 1 to {most}, got {value} (docs/limits.md)")
    return value
