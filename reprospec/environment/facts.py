"""A captured environment as flat dotted fields: what the store fingerprints and `compare` diffs.

{"torch": {"version": "2.13.0"}}  ->  {"torch.version": "2.13.0"}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypedDict

from reprospec.core.jsontypes import JsonValue
from reprospec.core.lazyre import Lazy
from reprospec.core.requirements import normalize
from reprospec.core.results import RunResult, alike

# Fields that change from one run to the next on the same machine: differences there are noise.
VOLATILE_ENV_FIELDS = frozenset(
    {
        "memory.available",
        "shm.free",
        "python.executable",
        "python.prefix",
        "python.base_prefix",
        # Which cell's interpreter the capture ran in: a run's bookkeeping, not a fact of it.
        "captured_in",
    }
)
# The spec settings that choose the interpreter: cells that differ in one ran several.
INTERPRETER_SETTINGS = ("python", "image", "dockerfile")
# What a capture holds of the interpreter it ran in (the rest is the machine's).
_INTERPRETER_FIELDS = ("python", "os", "packages", "torch", "collect_env", "multiprocessing")
# The field a capture sets on a part it did not take (envinfo.py: `{"captured": false}`),
# and the key of environment_diff's one row for such a part (report/compare.py says it).
NOT_CAPTURED = ".captured"
_REQUIREMENT_NAME = Lazy(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def flatten_environment(
    value: JsonValue | Mapping[str, JsonValue], prefix: str = ""
) -> dict[str, JsonValue]:
    """Nested mappings as dotted keys: a difference names its exact field (`packages.torch`)."""
    if isinstance(value, Mapping):
        if not value:
            return {prefix: {}}
        out: dict[str, JsonValue] = {}
        for key, item in value.items():
            out.update(flatten_environment(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


class Difference(TypedDict):
    """One field that differs: its dotted key and each side's value (None: missing)."""

    key: str
    a: JsonValue
    b: JsonValue


def environment_diff(a: Mapping[str, JsonValue], b: Mapping[str, JsonValue]) -> list[Difference]:
    """Environment fields that differ, as `{"key", "a", "b"}` (a missing side is None)."""
    flat_a, flat_b = flatten_environment(a), flatten_environment(b)
    keys = [k for k in dict.fromkeys([*flat_a, *flat_b]) if k not in VOLATILE_ENV_FIELDS]
    # A part one side did not capture (`"torch": {"captured": false}`: a spec that does not
    # say it uses torch) is one row, captured or not, not a row for each of the other side's
    # fields (a docker run beside a local one listed 15 rows of torch's build).
    sides = {
        part: (_captured(flat_a, part), _captured(flat_b, part))
        for part in (k.removesuffix(NOT_CAPTURED) for k in keys if k.endswith(NOT_CAPTURED))
    }
    skipped = {part: (a, b) for part, (a, b) in sides.items() if (a is False) != (b is False)}
    rows = [
        Difference(key=key, a=flat_a.get(key), b=flat_b.get(key))
        for key in keys
        if flat_a.get(key) != flat_b.get(key)
        and not any(key.startswith(f"{part}.") for part in skipped)
        and not _emptied(key, flat_a, flat_b)
    ]
    return [
        *(Difference(key=f"{part}{NOT_CAPTURED}", a=a, b=b) for part, (a, b) in skipped.items()),
        *rows,
    ]


def _emptied(key: str, a: Mapping[str, JsonValue], b: Mapping[str, JsonValue]) -> bool:
    """Whether `key` is a part empty on one side (`env: {}`) and holding fields on the
    other: those fields' own rows say the difference (`env: None -> {}` said nothing)."""
    return any(
        one.get(key) == {} and any(name.startswith(f"{key}.") for name in other)
        for one, other in ((a, b), (b, a))
    )


def _captured(flat: Mapping[str, JsonValue], part: str) -> bool | None:
    """Whether a capture took `part`: False where it said it did not, None where it holds
    nothing of it (a capture that failed), else True."""
    if flat.get(f"{part}{NOT_CAPTURED}") is False:
        return False
    return True if any(key.startswith(f"{part}.") for key in flat) else None


def package_name(requirement: str) -> str:
    """`Torch_Vision>=0.1` -> `torch-vision`: a requirement's project, as PyPI normalizes it."""
    match = _REQUIREMENT_NAME.match(requirement)
    name = match.group(1) if match else requirement
    return normalize(name)


def one_cell_fields(
    environments: Iterable[Mapping[str, JsonValue]], captured: Mapping[str, JsonValue]
) -> tuple[str, ...]:
    """The fields of a run's `captured` environment that hold one cell's values, not the run's,
    given its cells' `environments` (each cell's resolved `environment` section).

    The capture runs once per run, in the first cell's interpreter. Where a toggle chose
    the interpreter (`python`, `image`, `dockerfile`), everything the interpreter brings is
    that cell's; where it chose a package's version, that package's fields are. A report
    that showed them, or a `compare` that set them against another run's, would state one
    cell's version as the run's. Dotted prefixes, as `flatten_environment` names fields.
    """
    distinct = list({id(env): env for env in environments}.values())
    if len(distinct) < 2:
        return ()
    if any(len({str(env.get(key)) for env in distinct}) > 1 for key in INTERPRETER_SETTINGS):
        return _INTERPRETER_FIELDS
    requirements = [_requirements(env) for env in distinct]
    names = {name for each in requirements for name in each}
    varying = sorted(n for n in names if len({each.get(n) for each in requirements}) > 1)
    if not varying:
        return ()
    # The capture's own keys: the spec's spelling in `packages`, pip's in collect_env.
    spelled = [
        f"{section}.{key}"
        for section, table in (
            ("packages", captured.get("packages")),
            ("collect_env.pip", _pip(captured)),
        )
        if isinstance(table, Mapping)
        for key in table
        if package_name(str(key)) in varying
    ]
    # The docker runner builds one image per cell's packages: the capture's tag is one cell's.
    container = captured.get("container")
    image = ("container.image",) if isinstance(container, Mapping) and "image" in container else ()
    return (*spelled, *(("torch",) if "torch" in varying else ()), *image)


def run_one_cell_fields(run: RunResult) -> tuple[str, ...]:
    """`one_cell_fields` of a run: its cells' environments (each distinct one read once)
    against its captured environment."""
    return one_cell_fields((c.environment for c, _ in alike(run.cells)), run.environment)


def varying_variables(run: RunResult) -> tuple[str, ...]:
    """The variables a run's cells were given different values of (a toggle in
    `environment.env`): the capture's value of such a name is one cell's, not the run's."""
    envs = [cell.environment.get("env") for cell, _ in alike(run.cells)]
    tables = [env for env in envs if isinstance(env, Mapping)]
    names = {str(name) for table in tables for name in table}
    # A name only some cells set is varying too: unset in the others (None).
    return tuple(
        sorted(n for n in names if len({str(t.get(n)) for t in tables} | _unset(envs)) > 1)
    )


def _unset(envs: list[JsonValue]) -> set[str]:
    """{"None"} when some cell recorded no `env` table at all: its variables are unset."""
    return {"None"} if any(not isinstance(env, Mapping) for env in envs) else set()


def _requirements(environment: Mapping[str, JsonValue]) -> dict[str, str]:
    packages = environment.get("packages")
    if not isinstance(packages, (list, tuple)):
        return {}
    return {package_name(str(r)): str(r) for r in packages}


def _pip(captured: Mapping[str, JsonValue]) -> JsonValue:
    collect_env = captured.get("collect_env")
    return collect_env.get("pip") if isinstance(collect_env, Mapping) else None


def within(key: str, fields: Iterable[str]) -> bool:
    """Whether dotted `key` is one of `fields` or under one of them."""
    return any(key == f or key.startswith(f"{f}.") for f in fields)
