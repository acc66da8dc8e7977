"""Checks of the workload's built-in configuration: a mistake is an infra error, never the bug.

A spec expecting `outcome: error` must not count a typo (`dtype: float99`, an
unknown model parameter, an entrypoint that does not exist) as "reproduced": the
harness reports such a mistake as an `infra_error` event naming the spec field
(`workload.model.params: mlp() got an unexpected keyword argument 'x'`) and exits
with EXIT_INFRA. Only the configuration of the built-ins is checked; whatever a
user's entrypoint raises once it is called may be the incident, and stays an error.

Stdlib only (imported before torch).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from . import events
from .values import JsonValue

if TYPE_CHECKING:
    import torch

# The exit status after an `infra_error` event: the engine makes the cell `infra-error`
# (its outcome/classify.py reads it as HARNESS_EXIT_INFRA).
EXIT_INFRA = 3


class InfraError(Exception):
    """This machine cannot run the cell; not the incident."""


class ConfigError(InfraError):
    """The spec's workload configuration is wrong: `field: message`."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def infra_error(exc: InfraError) -> int:
    """The `infra_error` event and EXIT_INFRA: the engine makes the cell `infra-error`."""
    events.emit("infra_error", reason=str(exc))
    what = "invalid workload" if isinstance(exc, ConfigError) else "infrastructure error"
    sys.stderr.write(f"reprospec harness: {what}: {exc}\n")
    return EXIT_INFRA


def resolve_device(requested: str) -> torch.device:
    """`cpu` | `cuda` | `cuda:N` | `auto`; a missing GPU is an InfraError, never a crash."""
    import torch

    requested = str(requested)
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(requested)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "a CPU-only build"
            raise InfraError(
                f"device {requested} requested but no CUDA device is visible "
                f"(torch {torch.__version__}, {build})"
            )
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise InfraError(
                f"device {requested} requested but only {cuda_devices(count)} "
                f"{'is' if count == 1 else 'are'} visible"
            )
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise InfraError("device mps requested but MPS is not available on this machine")
    elif device.type not in ("cpu", "mps"):
        raise InfraError(
            f"device {requested!r} is not supported: expected cpu, cuda, cuda:N, mps or auto"
        )
    return device


def cuda_devices(count: int) -> str:
    """`1 CUDA device`, `2 CUDA devices`: the harness runs without reprospec's words.plural."""
    return f"{count} CUDA device{'' if count == 1 else 's'}"


def integer(value: object, field: str, minimum: int | None = None) -> int:
    """An integer (not a bool, not a string), at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(field, f"expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(field, f"expected an integer >= {minimum}, got {value}")
    return value


def number(value: object, field: str, minimum: float = 0.0, exclusive: bool = False) -> float:
    """A real number (int or float, not a bool) above `minimum` (or at it unless `exclusive`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(field, f"expected a number, got {value!r}")
    if value < minimum or (exclusive and value == minimum):
        relation = ">" if exclusive else ">="
        raise ConfigError(field, f"expected a number {relation} {minimum:g}, got {value}")
    return float(value)


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0", "")


def boolean(value: object, field: str) -> bool:
    """true/false (also 0/1 and their spellings as text, from `${{ env.X }}`); None is false."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(field, f"expected true or false, got {value!r}")


def mapping(value: JsonValue, field: str) -> Mapping[str, JsonValue]:
    """A mapping (None is empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(field, f"expected a mapping, got {value!r}")
    return value


def choice(
    value: object, field: str, what: str, choices: Mapping[str, object] | tuple[str, ...]
) -> str:
    """One of `choices`, else `unknown WHAT 'x' (expected one of a, b, c)`."""
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(
            field, f"unknown {what} {value!r} (expected one of {', '.join(map(str, choices))})"
        )
    return value


def bind(
    function: Callable[..., object], name: str, field: str, *args: object, **kwargs: object
) -> None:
    """Do these arguments fit `function`'s signature? Checked without calling it.

    `mlp() got an unexpected keyword argument 'x'`. A callable whose signature
    cannot be read is not checked (the call itself will say).
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise ConfigError(field, f"{name}() {exc}") from None
