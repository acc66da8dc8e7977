"""The environment of the bug report: the harness's capture as (label, value) rows, and
what differs from cell to cell.

The capture is taken once per run, with one cell's environment. When a toggle
changes the environment (`env` variables, `packages`, `image`), the cells did
not all run with what the capture shows: those values are shown next to each
cell instead, and the run-level table keeps only what every cell shared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonValue
from reprospec.core.results import CellResult, RunResult, alike
from reprospec.core.words import size
from reprospec.environment.facts import INTERPRETER_SETTINGS, package_name

# Sections of the captured environment (harness envinfo) that get rows of their own.
_ENV_SECTIONS = frozenset(
    {
        "format",
        "python",
        "os",
        "cpu",
        "memory",
        "shm",
        "torch",
        "nvidia",
        "nvcc",
        "multiprocessing",
        "packages",
        "env",
        "environment_mismatch",
        "environment_unjudged",  # said below the mismatches (`unjudged`)
        "collect_env",  # its own folded block (report/versions.py)
        "captured_in",  # the cell whose interpreter it was: named by the Versions block
        "variable_digests",  # for compare only: digests tell a reader nothing
        "inherited_digests",  # the same: the shell's other variables, by digest
        "program_files",  # the same: the digests of the program's files
        "spec_variables",  # for resume and compare: the variables the spec read
    }
)


def _words(*parts: object) -> str:
    """The non-empty parts joined by spaces; '(…)' parts whose inside is empty are dropped."""
    return " ".join(str(p) for p in parts if p not in (None, "", "()", []))


def env_value(value: object) -> str:
    """An environment value of any shape as readable text ('' when there is nothing to say)."""
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        items = ((k, env_value(v)) for k, v in value.items())
        return ", ".join(f"{k} {v}" for k, v in items if v)
    if isinstance(value, (list, tuple)):
        sep = "; " if any(isinstance(v, Mapping) for v in value) else ", "
        return sep.join(t for t in (env_value(v) for v in value) if t)
    return str(value)


def _section(env: Mapping[str, JsonValue], name: str) -> Mapping[str, JsonValue]:
    value = env.get(name)
    return value if isinstance(value, Mapping) else {}


def _torch_rows(
    torch: Mapping[str, JsonValue], nvidia: Mapping[str, JsonValue]
) -> list[tuple[str, str]]:
    if not torch or torch.get("captured") is False:
        return []
    if torch.get("installed") is False:
        return [("torch", "not installed")]
    if torch.get("error"):
        return [("torch", f"import failed: {torch['error']}")]
    details = ", ".join(
        part
        for part in (
            f"CPU capability {torch['cpu_capability']}" if torch.get("cpu_capability") else "",
            "debug build" if torch.get("debug") else "",
            f"{torch['num_threads']} threads" if torch.get("num_threads") else "",
        )
        if part
    )
    if torch.get("cuda"):
        state = "available" if torch.get("cuda_available") else "not available"
        cuda = f"{torch['cuda']} ({state}, {torch.get('device_count') or 0} devices)"
    elif torch.get("hip"):
        cuda = f"none; ROCm {torch['hip']}"
    else:
        cuda = "none (CPU-only torch build)" if torch.get("version") else ""
    if nvidia.get("cuda_version"):
        cuda = _words(cuda, f"(driver supports CUDA {nvidia['cuda_version']})")
    return [
        ("torch", _words(torch.get("version"), f"({details})" if details else "")),
        ("CUDA", cuda),
        ("cuDNN", env_value(torch.get("cudnn"))),
        ("CUDA arch list", env_value(torch.get("arch_list"))),
    ]


def _gpus(torch: Mapping[str, JsonValue], nvidia: Mapping[str, JsonValue]) -> str:
    gpus = nvidia.get("gpus") or torch.get("gpus") or []
    texts = []
    for gpu in gpus if isinstance(gpus, list) else []:
        if not isinstance(gpu, Mapping):
            texts.append(str(gpu))
            continue
        mib = gpu.get("memory_mib")
        memory = size(mib * 2**20) if isinstance(mib, (int, float)) and mib else ""
        cc = f"cc {gpu['capability']}" if gpu.get("capability") else ""
        inside = ", ".join(p for p in (cc, memory) if p)
        texts.append(_words(f"{gpu.get('index', '?')}:", gpu.get("name"), f"({inside})"))
    if texts:
        return "; ".join(texts)
    return "none (no nvidia-smi)" if "nvidia_smi" in nvidia and not nvidia["nvidia_smi"] else ""


# Environment variables whose value the capture reports in a row of its own.
_THREAD_VARS = frozenset({"OMP_NUM_THREADS", "MKL_NUM_THREADS"})
# Rows that describe the software an image or interpreter brings: a cell-varying
# image or python makes them one cell's, not the run's.
_SOFTWARE_ROWS = frozenset(
    {
        "Python",
        "OS",
        "Container",
        "torch",
        "CUDA",
        "cuDNN",
        "CUDA arch list",
        "nvcc",
        "Default start method",
        "Packages",
    }
)
_TORCH_ROWS = frozenset({"torch", "CUDA", "cuDNN", "CUDA arch list"})
_SOFTWARE_KEYS = frozenset(INTERPRETER_SETTINGS)


@frozen
class CellEnvironments:
    """What differs between the cells' environments: the settings, and each cell's values.

    `varying`: keys like `env:OMP_NUM_THREADS`, `package:torch`, `image`;
    `per_cell`: cell id -> that cell's values of them (`OMP_NUM_THREADS=1`).
    """

    varying: frozenset[str] = frozenset()
    per_cell: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def env_vars(self) -> frozenset[str]:
        return frozenset(k[4:] for k in self.varying if k.startswith("env:"))

    @property
    def packages(self) -> frozenset[str]:
        return frozenset(k[8:] for k in self.varying if k.startswith("package:"))


def cell_environments(cells: Sequence[CellResult]) -> CellEnvironments:
    """The settings whose value differs between cells (every cell must know its environment)."""
    if len(cells) < 2 or not all(c.environment for c, _ in alike(cells)):
        return CellEnvironments()
    # Read once per environment object: the cells that ran the same environment share one
    # (outcome/judge.py), and a dict of settings per cell was 30 MiB at 65,536 cells.
    distinct: dict[int, dict[str, tuple[str, str | None]]] = {}
    for cell, _ in alike(cells):
        if id(cell.environment) not in distinct:
            distinct[id(cell.environment)] = _settings(cell.environment)
    settings = list(distinct.values())
    keys = list(dict.fromkeys(k for each in settings for k in each))
    varying = [k for k in keys if len({each.get(k, ("", None))[1] for each in settings}) > 1]
    if not varying:
        return CellEnvironments()
    per_cell = {
        cell.cell.id: tuple(
            distinct[id(cell.environment)].get(k, (_absent(k), None))[0] for k in varying
        )
        for cell in cells
    }
    return CellEnvironments(frozenset(varying), per_cell)


def _settings(environment: Mapping[str, JsonValue]) -> dict[str, tuple[str, str | None]]:
    """key -> (how it reads next to a cell, the value compared) of one cell's environment."""
    out: dict[str, tuple[str, str | None]] = {}
    for key, value in environment.items():
        if key == "env" and isinstance(value, Mapping):
            for name, text in value.items():
                out[f"env:{name}"] = (f"{name}={text}", str(text))
        elif key == "packages" and isinstance(value, (list, tuple)):
            for requirement in value:
                name = package_name(str(requirement))
                out[f"package:{name}"] = (str(requirement), str(requirement))
        elif key == "debug" and isinstance(value, Mapping):
            # One setting per GPU diagnostic, so the cell that had it on reads `compute_sanitizer:
            # memcheck` beside the one that had it off.
            for name, setting in value.items():
                out[f"debug:{name}"] = (f"{name}: {env_value(setting) or setting}", str(setting))
        elif key in ("shm_size", "memory"):
            out[key] = (f"{key}: {size(value)}", str(value))
        elif key != "workdir":
            out[key] = (f"{key}: {env_value(value) or value}", str(value))
    return out


def _absent(key: str) -> str:
    kind, _, name = key.partition(":")
    if kind == "env":
        return f"{name} unset"
    if kind == "debug":
        return f"{name} off"
    if kind == "package":
        return f"no {name}"
    return f"{key}: none"


def environment_rows(
    env: Mapping[str, JsonValue], differs: CellEnvironments | None = None
) -> list[tuple[str, str]]:
    """(label, value) rows for the environment table, from the harness capture; nothing empty.

    With `differs`, rows (and parts of rows) that hold a value some cells did not
    run with are left out: those values are shown next to each cell.
    """
    rows = _capture_rows(env)
    if differs is None or not differs.varying:
        return rows
    drop: set[str] = set()
    if differs.varying & _SOFTWARE_KEYS:
        drop |= _SOFTWARE_ROWS
    if "torch" in differs.packages:
        drop |= _TORCH_ROWS
    torch = _section(env, "torch")
    kept: list[tuple[str, str]] = []
    for label, value in rows:
        if label in drop:
            continue
        if label == "torch" and (
            "ATEN_CPU_CAPABILITY" in differs.env_vars or differs.env_vars & _THREAD_VARS
        ):
            value = _torch_version(torch, differs)
        elif label == "container" and (differs.packages or differs.varying & _SOFTWARE_KEYS):
            # The docker runner builds an image per cell's packages: its tag is one cell's.
            container = _section(env, "container")
            value = env_value({k: v for k, v in container.items() if k != "image"})
        elif label == "Packages":
            value = ", ".join(
                f"{k} {v or 'not installed'}"
                for k, v in _section(env, "packages").items()
                if package_name(str(k)) not in differs.packages
            )
        if value:
            kept.append((label, value))
    return kept


def _torch_version(torch: Mapping[str, JsonValue], differs: CellEnvironments) -> str:
    """The torch row without the details a cell-varying variable sets."""
    details = ", ".join(
        part
        for part in (
            f"CPU capability {torch['cpu_capability']}"
            if torch.get("cpu_capability") and "ATEN_CPU_CAPABILITY" not in differs.env_vars
            else "",
            "debug build" if torch.get("debug") else "",
            f"{torch['num_threads']} threads"
            if torch.get("num_threads") and not differs.env_vars & _THREAD_VARS
            else "",
        )
        if part
    )
    return _words(torch.get("version"), f"({details})" if details else "")


def _capture_rows(env: Mapping[str, JsonValue]) -> list[tuple[str, str]]:
    """(label, value) rows for the environment table, from the harness capture; nothing empty."""
    py, system, cpu = _section(env, "python"), _section(env, "os"), _section(env, "cpu")
    memory, shm, torch = _section(env, "memory"), _section(env, "shm"), _section(env, "torch")
    nvidia, nvcc = _section(env, "nvidia"), _section(env, "nvcc")
    cores = cpu.get("cores")
    usable = cpu.get("usable_cores")
    memory_notes = ", ".join(
        f"{label} {size(memory[key])}"
        for key, label in (
            ("available", "available:"),
            ("cgroup_limit", "cgroup limit"),
            ("rlimit_as", "RLIMIT_AS"),
        )
        if memory.get(key)
    )
    rows = [
        ("Python", _words(py.get("version"), f"({py.get('implementation') or ''})")),
        (
            "OS",
            _words(
                system.get("distribution") or system.get("system"),
                f"({system.get('machine') or ''})",
            ),
        ),
        ("Kernel", env_value(system.get("kernel"))),
        ("WSL", env_value(system.get("wsl"))),
        ("Container", env_value(system.get("container"))),
        ("CPU", _words(cpu.get("model"), f"({cpu.get('vendor') or ''})")),
        ("CPU flags", env_value(cpu.get("flags"))),
        ("Cores", _words(cores, f"({usable} usable)" if usable and usable != cores else "")),
        ("Memory", _words(size(memory.get("total")), f"({memory_notes})")),
        (
            "/dev/shm",
            "missing"
            if shm.get("present") is False
            else _words(
                size(shm.get("size")), f"({size(shm['free'])} free)" if shm.get("free") else ""
            ),
        ),
        *_torch_rows(torch, nvidia),
        ("GPUs", _gpus(torch, nvidia)),
        ("Driver", env_value(nvidia.get("driver_version"))),
        ("nvcc", env_value(nvcc.get("version"))),
        # multiprocessing's default in the interpreter, not what a DataLoader used: one with
        # `multiprocessing_context: spawn` ran its workers so beside a `fork` here.
        (
            "Default start method",
            env_value(_section(env, "multiprocessing").get("start_method")),
        ),
        (
            "Packages",
            ", ".join(f"{k} {v or 'not installed'}" for k, v in _section(env, "packages").items()),
        ),
    ]
    rows += [(key, env_value(value)) for key, value in env.items() if key not in _ENV_SECTIONS]
    return [(label, value) for label, value in rows if value]


def env_vars(
    env: Mapping[str, JsonValue], differs: CellEnvironments | None = None
) -> list[tuple[str, str]]:
    """(name, value) of the environment variables the capture recorded, sorted.

    With `differs`, the variables whose value differs between cells are left out.
    """
    varying = differs.env_vars if differs is not None else frozenset()
    return [
        (str(k), str(v)) for k, v in sorted(_section(env, "env").items()) if str(k) not in varying
    ]


def mismatches(env: Mapping[str, JsonValue]) -> list[str]:
    """Where the spec's environment differs from the one that ran, one line each."""
    found = env.get("environment_mismatch")
    if not found:
        return []
    if isinstance(found, Mapping):
        return [f"{k}: {env_value(v)}" for k, v in found.items()]
    if isinstance(found, (list, tuple)):
        return [env_value(item) for item in found]
    return [str(found)]


def unjudged(env: Mapping[str, JsonValue]) -> list[str]:
    """The spec's requirements whose extras the run's capture could not judge (the docker
    runner's: no Requires-Dist in a capture, no interpreter here to ask), said as such
    rather than passed over as if they matched."""
    found = env.get("environment_unjudged")
    return [env_value(item) for item in found] if isinstance(found, (list, tuple)) else []


def unjudged_said(names: Sequence[str]) -> str:
    """What the report says, under its Environment mismatch heading, of the requirements
    `unjudged` names ("" where none)."""
    if not names:
        return ""
    return (
        f"Not judged here: what the extras of {', '.join(names)} require (a captured "
        "environment holds no Requires-Dist); the run's own package check judged it in the "
        "cell's environment before each attempt, and a cell it refused is an infra error "
        "naming what is missing."
    )


def _perturbed(cell: CellResult) -> bool:
    """Whether `cell` ran under environment.perturb, or its spec asked it to."""
    asked = cell.environment.get("perturb")
    return any(a.perturbed for a in cell.attempts) or (isinstance(asked, dict) and bool(asked))


def perturbed_cells(run: RunResult) -> list[tuple[str, str]]:
    """(cell, `switch_interval=1e-06 (…)`) for each cell that ran under environment.perturb.

    As the runner applied each (a memory limit says whether it was a cgroup's); a cell
    none of whose attempts ran says what its spec asked.
    """
    out: list[tuple[str, str]] = []
    if not any(_perturbed(c) for c, _ in alike(run.cells)):
        return out
    for cell in run.cells:
        notes = next((a.perturbed for a in cell.attempts if a.perturbed), ())
        if not notes:
            asked = cell.environment.get("perturb")
            if isinstance(asked, dict) and asked:
                notes = tuple(f"{k}={v}" for k, v in asked.items())
        if notes:
            out.append((cell.cell.id, "; ".join(notes)))
    return out
