"""Whether a cell's packages resolve, asked as the venv build would install them, nothing built.

`doctor --runner venv` passed a spec of `six==99`: only the build at run time failed, and
then every cell of it was `infra-error`. `resolve` asks uv's resolver (`uv pip compile`)
with the build's own index options (`IndexConfig.uv_args`; no upload cutoff, which only
`bisect --by-date` gives a build and doctor never does) and target interpreter (its
markers), in the spec's folder (a relative path entry), and reads the answer as one of
three: resolves, cannot (uv found no solution: the build would fail too), or could not be
told (the index did not answer, uv timed out or failed otherwise), which is never said as
a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.venvs.build import EnvBuildError, UvTimeout, run_uv, uv_error, uv_pip_args
from reprospec.venvs.index import IndexConfig

# A resolve that takes longer than this is said as not checked (a slow or silent index).
RESOLVE_TIMEOUT_S = 120.0
# How long one request of the resolve waits for the index to answer, with no retry: uv's own
# (UV_HTTP_TIMEOUT, 30 s, then UV_HTTP_RETRIES=3 more) outlasted RESOLVE_TIMEOUT_S, so a
# silent index (one that accepts the connection and never answers) cost each list the whole
# resolve's timeout, read as a long list's backtracking, and doctor asked the next list: 2 x
# 120 s. With one wait shorter than the resolve's, uv says its own `operation timed out`,
# read as the index's (`unreached`), and the lists left are not asked. A user's shorter
# UV_HTTP_TIMEOUT is kept.
INDEX_TIMEOUT_S = 30
# uv's words where its answer came from no index: a request that failed or was not made.
# A "No solution found" beside one of them is the network's, not the requirements'. Each
# is words no package's name holds (a space in each): uv's output names the packages, and a
# lone "offline" read `offline-foo==99`'s "No solution found" as the network's (review);
# uv's offline words are "network connectivity is disabled" and "not found in the cache".
_UNREACHED = (
    "failed to fetch",
    "error sending request",
    "request failed after",
    "dns error",
    "tcp connect error",
    "connection refused",
    "timed out",
    "network connectivity is disabled",
    "not found in the cache",
)


@frozen
class Resolved:
    """uv's answer for one package list: `state` `ok` (it resolves), `unsatisfiable` (uv
    found no solution, or the build backend of a distribution it picked failed: the build
    would fail the same way) or `unknown` (no answer to go by); `said`, uv's reason in a
    few lines where it did not resolve."""

    state: Literal["ok", "unsatisfiable", "unknown"]
    said: str = ""
    # Why an `unknown` answer may say something of the lists asked after it ("": uv failed
    # otherwise): `unreached`, the index did not answer (uv's network words), and every list
    # asked of the same index waits it out again; `timed_out`, uv ran past the timeout,
    # which may be this list's backtracking alone as often as a silent index (doctor stops
    # asking only after `_TIMEOUTS` of them, commands/doctorvenv).
    stopped: Literal["", "unreached", "timed_out"] = ""


def resolve(
    python: str,
    packages: Sequence[str],
    index: IndexConfig,
    *,
    cwd: Path | None = None,
    timeout_s: float = RESOLVE_TIMEOUT_S,
) -> Resolved:
    """Whether `packages` resolve for interpreter `python` from `index` (build._install's
    options, `uv_pip_args`), read from `cwd` (where the build runs uv: a relative path entry).
    Without uv, `unknown`, saying why (EnvBuildError's words). Each request waits
    `index_wait_s()` for the index, once (INDEX_TIMEOUT_S)."""
    waited = index_wait_s()
    try:
        done = run_uv(
            ["pip", "compile", "-", "--quiet", "--no-header", *uv_pip_args(python, index)],
            timeout=timeout_s,
            cwd=cwd,
            input="".join(f"{requirement}\n" for requirement in packages),
            env={"UV_HTTP_TIMEOUT": str(waited), "UV_HTTP_RETRIES": "0"},
        )
    except UvTimeout:
        return Resolved("unknown", f"uv pip compile took over {timeout_s:g}s", stopped="timed_out")
    except EnvBuildError as exc:  # (uv is not installed)
        return Resolved("unknown", str(exc))
    except OSError as exc:
        return Resolved("unknown", f"uv could not be run ({exc})")
    if done.returncode == 0:
        return Resolved("ok")
    output = done.stderr or done.stdout
    lowered = output.lower()
    unreached = any(words in lowered for words in _UNREACHED)
    # No solution, or a distribution it picked whose build backend failed (an sdist that
    # cannot build here: the build at run time builds it the same way, and fails alike).
    backend = "failed to build" in lowered and "build backend returned an error" in lowered
    if ("no solution found" in lowered or backend) and not unreached:
        return Resolved("unsatisfiable", uv_error(output))
    if unreached and "operation timed out" in lowered:
        # (a silent index, told as such once: uv's lines name only the request that waited)
        said = f"the index did not answer in {waited} s ({uv_error(output)})"
        return Resolved("unknown", said, stopped="unreached")
    return Resolved("unknown", uv_error(output), stopped="unreached" if unreached else "")


def index_wait_s() -> int:
    """How long each request of `resolve` waits for the index: INDEX_TIMEOUT_S, or the user's
    UV_HTTP_TIMEOUT where it is shorter (a whole number of seconds, as uv reads it)."""
    import os

    given = os.environ.get("UV_HTTP_TIMEOUT", "")
    if given.isdigit() and 0 < int(given) < INDEX_TIMEOUT_S:
        return int(given)
    return INDEX_TIMEOUT_S
