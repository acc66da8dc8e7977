"""The report templates (`templates/`), compiled in Jinja's sandbox: one way for every format.

A spec's text reaches the templates (titles, messages, values), so they render sandboxed,
with undefined names an error. Compiling a template costs more than filling it in, so each
renderer keeps the one it loaded (isolate, bisect and the pytest plugin render many reports)
and the compiled code is cached on disk between processes, in Jinja's own per-user folder of
the temporary directory (checked to be private; none when it is not).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jinja2 import Template


def load_template(
    name: str, *, autoescape: bool, filters: Mapping[str, Callable[..., object]]
) -> Template:
    """`templates/NAME` with these filters; `autoescape` for HTML, not for markdown."""
    from jinja2 import FileSystemBytecodeCache, FileSystemLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    try:
        cache: FileSystemBytecodeCache | None = FileSystemBytecodeCache()
    except RuntimeError:
        cache = None
    env = SandboxedEnvironment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=autoescape,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=cache,
    )
    env.filters.update(filters)
    return env.get_template(name)
