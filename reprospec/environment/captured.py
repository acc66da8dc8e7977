"""A captured environment (the JSON `envinfo` writes) read, and held against the spec.

The readers take each value as the type the check wants, whatever the capture holds (a
missing section, a null, a list where a mapping was expected). `environment_mismatches`
is one rule for two callers: a run's capture notes that what ran is not what the spec
names, and `doctor` says it of the interpreter it found. It lives here, not in `doctor/`,
because every run needs it and none needs the doctor's checks (issue 30, item 4).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.core.sections import same_python

# A captured environment (envinfo's JSON), as the checks read it.
Captured = Mapping[str, JsonValue]


def section(env: Mapping[str, JsonValue], key: str) -> JsonObject:
    """The mapping at `key` (`torch`, `nvidia`, `shm`, ...), empty when missing or not one."""
    value = env.get(key)
    return value if isinstance(value, dict) else {}


def text(value: JsonValue) -> str:
    """A captured value as text: empty for null."""
    return "" if value is None else str(value)


def strings(value: JsonValue) -> list[str]:
    """A captured list as strings (empty when missing or not a list)."""
    return [str(item) for item in value] if isinstance(value, list) else []


def whole(value: JsonValue, default: int) -> int:
    """A captured count as an int (`2`, `2.0`, `"2"`); `default` when absent, 0 or unreadable."""
    if not value or isinstance(value, (list, dict)):
        return default
    try:
        return int(value)
    except ValueError:
        return default


def environment_mismatches(
    env: Captured, environment: Mapping[str, JsonValue], *, ran: bool = True
) -> list[str]:
    """Differences between the spec's `environment` (python, packages) and an interpreter.

    `ran`: the interpreter ran the cells (a run's capture: `python 3.11.7 ran`), else it is
    only the one found (`doctor`: nothing ran). Packages are compared by the local runner's
    own rule (environment/packages.mismatches: PEP 440 versions, and a requirement whose
    marker is false for that interpreter is not required there), on what the capture saw
    of them and of its marker values; a package the capture did not look for is left out.
    """
    out = []
    wanted_python = environment.get("python")
    actual_python = text(section(env, "python").get("version"))
    if wanted_python and actual_python and not same_python(actual_python, str(wanted_python)):
        said = (
            f"python {actual_python} ran" if ran else f"the interpreter is python {actual_python}"
        )
        out.append(f"{said}; the spec names {wanted_python}")
    requirements = strings(environment.get("packages"))
    if not requirements:
        return out  # (and the packages' rule unimported: a run of a spec without any)
    from reprospec.environment import packages as checked

    captured = section(env, "packages")
    versions = {checked.normalize(name): have for name, have in captured.items()}
    looked_for = [
        requirement
        for requirement in requirements
        if any(name in versions for name in checked.requirement_names([requirement]))
    ]
    if looked_for:
        markers = section(section(env, "python"), "markers")
        installed = checked.Installed(
            text(section(env, "python").get("executable")),
            {name: None if have is None else str(have) for name, have in versions.items()},
            {key: str(value) for key, value in markers.items()},
        )
        out.extend(checked.mismatches(looked_for, installed))
    return out


def extra_mismatches(
    env: Captured,
    requirements: Sequence[str],
    *,
    variables: Mapping[str, str],
    cwd: Path | None,
) -> tuple[list[str], list[str]]:
    """What the extras of `requirements` (`torch[opt-einsum]`) lack in the interpreter that
    ran, and the requirements whose extras are left unjudged: (mismatches, unjudged).

    A capture holds versions, not Requires-Dist, so `environment_mismatches` cannot say what
    an extra requires: a run whose check refused every cell for a missing `opt-einsum`
    reported an Environment section with no mismatch. On the local runner (`variables`:
    the cell's environment.env, `cwd`: its workdir) the interpreter is asked as the run's
    own check and `doctor` ask it (packages.lists_mismatches: the same probe, the same
    rule, the same words); with no interpreter here to ask (`cwd` None: the docker
    runner's, in its image), each such requirement is named as not judged.
    """
    from reprospec.environment import packages as checked

    extras = [r for r in requirements if checked.wants_extras([r])]
    if not extras:
        return [], []
    python = section(env, "python").get("executable")
    if cwd is None or not isinstance(python, str) or not python:
        return [], extras
    found = checked.lists_mismatches(
        python, [tuple(requirements)], env={**os.environ, **variables}, cwd=cwd
    )
    return list(found.get(tuple(requirements), ())), []
