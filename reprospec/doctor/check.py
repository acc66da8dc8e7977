"""What every doctor check is made of: a `Check`, and a captured environment read safely.

A captured environment is the JSON envinfo wrote (`env.json`): every section may
be missing or of another shape when capture failed, so it is read through
`section`/`text`/`whole`, never indexed blindly.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject, JsonValue
from reprospec.environment.captured import Captured, section, whole

Status = Literal["pass", "warn", "fail", "skipped"]
NO_GPU = "no CUDA device"
# The torch check's why where the captured interpreter has no torch (machine.check_torch),
# which the runner's rewording of that check compares against (doctor._installed_by_runner).
NO_TORCH = "torch is not installed in this interpreter"


@frozen
class Check:
    name: str
    status: Status
    why: str
    todo: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def version_tuple(text: JsonValue) -> tuple[int, ...]:
    """`12.4.1+cu124` -> (12, 4, 1); unparsable parts end the tuple (all of a non-string)."""
    parts: list[int] = []
    for part in re.split(r"[.+-]", text if isinstance(text, str) else ""):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def gpus(env: Captured) -> list[JsonObject]:
    """GPUs as torch saw them, else as nvidia-smi did (both carry `capability` when known)."""
    found = section(env, "torch").get("gpus") or section(env, "nvidia").get("gpus")
    return [gpu for gpu in found if isinstance(gpu, dict)] if isinstance(found, list) else []


def seen_devices(env: Captured) -> int:
    """The CUDA devices this machine shows: those torch or nvidia-smi listed, else torch's
    count read as `whole` reads counts (`2`, `2.0`, `"2"`; 0: none seen). One rule for
    `gpu-slots` and `device`: gpu-slots took only an int, and warned "no CUDA device is
    seen here" of a count of 2.0 that `device` counted as 2."""
    return len(gpus(env)) or max(whole(section(env, "torch").get("device_count"), 0), 0)


def unseen_ids(env: Captured, ids: tuple[str, ...]) -> tuple[str, ...]:
    """The ids of a set CUDA_VISIBLE_DEVICES that name no device seen here: an index no
    nvidia-smi row has (nvidia-smi lists the machine's GPUs whatever the mask); without
    its rows, those past the devices torch counted (CUDA counts a mask's ids up to the
    first that names nothing). `seen_devices` alone passed `2,3` on a 2-GPU machine, whose
    every cell finds no GPU, and `0,1,2,3` there for `gpus: 2`, whose second attempt at a
    time is handed `2,3`. A UUID (`GPU-...`, `MIG-...`) is not judged by nvidia-smi's rows:
    the capture keeps no UUIDs."""
    rows = section(env, "nvidia").get("gpus")
    indexes = {
        str(row["index"]).strip()
        for row in (rows if isinstance(rows, list) else [])
        if isinstance(row, dict) and isinstance(row.get("index"), (int, str))
    }
    if indexes:
        return tuple(i for i in ids if i.isdigit() and str(int(i)) not in indexes)
    torch = section(env, "torch")
    listed = torch.get("gpus")
    counted = len(listed) if isinstance(listed, list) and listed else None
    if counted is None:
        counted = whole(torch.get("device_count"), -1)
    return ids[counted:] if counted >= 0 else ()


def unseen_said(unseen: tuple[str, ...]) -> str:
    """`unseen_ids`' ids as the checks say them: `ids 2, 3 name no GPU seen here`."""
    which = f"id {unseen[0]} names" if len(unseen) == 1 else f"ids {', '.join(unseen)} name"
    return f"{which} no GPU seen here"


def torch_state(env: Captured) -> str:
    """torch when it brings no CUDA runtime: not installed, broken, not captured, or a CPU build."""
    torch = section(env, "torch")
    if torch.get("installed") is False:
        return "torch is not installed"
    if torch.get("error"):
        return "torch does not import"
    if not torch.get("version"):
        return "torch was not captured"
    return "torch is a CPU-only build"
