"""reprospec: turn a machine- and configuration-dependent crash into a rerunnable YAML spec.

Importing this package must stay cheap and must never import torch: the parent
process stays light and CUDA-free whatever the child does. The Python API
(`reprospec.run`, `reprospec.load_spec`, ...; see `reprospec/api.py` and
docs/python-api.md) is loaded on first use.
"""

# No `from __future__ import annotations`: it imports __future__, and this body runs no call
# (see _SEARCHES below).
# Not typing's: importing typing costs the CLI's start-up ~4 ms, in which a Ctrl-C reaches
# no handler of reprospec's (__main__.main's comes after this module). mypy reads
# this name as typing.TYPE_CHECKING.
TYPE_CHECKING = False

__version__ = "0.1.0"

if TYPE_CHECKING:
    from reprospec.api import (
        RunOptions,
        RunPlan,
        RunResult,
        Shard,
        Spec,
        Validation,
        compare,
        exit_code,
        load_result,
        load_spec,
        plan_run,
        render,
        resume,
        run,
        validate,
    )
    from reprospec.investigate import (
        AmplifyOptions,
        AmplifyReport,
        BisectReport,
        BisectRequest,
        Captured,
        IsolateOptions,
        IsolateResult,
        Minimized,
        MinimizeOptions,
        amplify_spec,
        bisect_spec,
        capture_command,
        isolate_spec,
        minimize_spec,
    )


def __getattr__(name: str) -> object:
    # Lazy: `import reprospec` (and the CLI's start-up) must not load yaml, jsonschema or rich.
    if name in _SEARCHES:
        from reprospec import investigate

        return getattr(investigate, name)
    if name in __all__ and name != "__version__":
        from reprospec import api

        return getattr(api, name)
    raise AttributeError(f"module 'reprospec' has no attribute {name!r}")


__all__ = [
    "AmplifyOptions",
    "AmplifyReport",
    "BisectReport",
    "BisectRequest",
    "Captured",
    "IsolateOptions",
    "IsolateResult",
    "MinimizeOptions",
    "Minimized",
    "RunOptions",
    "RunPlan",
    "RunResult",
    "Shard",
    "Spec",
    "Validation",
    "__version__",
    "amplify_spec",
    "bisect_spec",
    "capture_command",
    "compare",
    "exit_code",
    "isolate_spec",
    "load_result",
    "load_spec",
    "minimize_spec",
    "plan_run",
    "render",
    "resume",
    "run",
    "validate",
]
# What __getattr__ reads from reprospec.investigate (the searches, which come after the
# stages they drive); the rest of the list above, less __version__, is reprospec.api's. A
# tuple of constants, one LOAD_CONST: the console script imports this package under Python's
# default SIGINT handler (before __main__.main's), and a Ctrl-C is raised at a call or a
# function's entry, so a body that calls nothing leaves the least room for a Ctrl-C to print
# a traceback through it (`frozenset(...)` here was one such call: seen in the full suite).
_SEARCHES = (
    "AmplifyOptions",
    "AmplifyReport",
    "BisectReport",
    "BisectRequest",
    "Captured",
    "IsolateOptions",
    "IsolateResult",
    "MinimizeOptions",
    "Minimized",
    "amplify_spec",
    "bisect_spec",
    "capture_command",
    "isolate_spec",
    "minimize_spec",
)
