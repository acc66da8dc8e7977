"""`environment.debug`: the GPU diagnostics a matrix can pair with a plain cell.

A CUDA fault's Python stack is usually wrong (kernels run asynchronously), so the
incident is found by rerunning the same cell with a diagnostic on:

    launch_blocking       CUDA_LAUNCH_BLOCKING=1: the error surfaces at the launch that faulted
    cuda_coredump         a GPU core dump (the faulting kernel and PC) written in the attempt folder
    compute_sanitizer     the attempt runs under `compute-sanitizer --tool X` (the bad access)
    nccl_debug            NCCL_DEBUG (and NCCL_DEBUG_SUBSYS): NCCL's own log
    nccl_flight_recorder  torch's NCCL flight recorder, dumped into the attempt folder on a hang

Each is a variable set (or an argv wrapper) for the attempt, whatever the job, so a
command spec gets them as a workload does. This module is pure: the values, the
variables, the wrapped argv and the pairs that cannot work together. Finding the
compute-sanitizer binary and reading its output is process/sanitizer.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from reprospec.core.frozen import frozen
from reprospec.core.jsontypes import JsonObject

SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
NCCL_LEVELS = ("VERSION", "WARN", "INFO", "TRACE")
CoreDump = Literal["lightweight", "full"]

# Files the diagnostics write, in the attempt folder (the report and the device session read them).
SANITIZER_LOG = "compute-sanitizer.log"
CORE_PATTERN = "cuda-core.%p.%h.nvcudmp"  # the driver expands %p (pid) and %h (host)
FLIGHT_RECORDER_PREFIX = "nccl-trace-rank-"  # torch appends the rank
CORE_GLOB = "cuda-core.*.nvcudmp"
# cuda-gdb's batch output on the attempt's first GPU core: stdout, stderr, exit status.
CUDA_GDB_FILES = ("cuda-gdb.out", "cuda-gdb.err", "cuda-gdb.rc")
# In the driver's core-dump progress lines on stderr (outcome/cudacore.py reads them).
DRIVER_COREDUMP_MARK = "] coredump: "
# compute-sanitizer's exit status when it found errors (its own failures exit 255).
SANITIZER_ERROR_EXIT = 86
DEFAULT_FLIGHT_RECORDER_ENTRIES = 2000
# The lightweight core: no memory contents, no unrelocated ELF images (small and fast to
# write; the faulting kernel, PC and registers are still there).
LIGHTWEIGHT_CORE_FLAGS = ",".join(
    (
        "skip_nonrelocated_elf_images",
        "skip_global_memory",
        "skip_shared_memory",
        "skip_local_memory",
        "skip_constbank_memory",
    )
)
# Variables the diagnostics set: the spec's own `environment.env` may not set them too
# (one cell, two values: which one ran would depend on the order they were applied).
COREDUMP_VARS = (
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
    "CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION",
    "CUDA_COREDUMP_SHOW_PROGRESS",
    "CUDA_COREDUMP_GENERATION_FLAGS",
    "CUDA_COREDUMP_FILE",
)
# Named for the attempt folder: they change with every attempt (preload.PER_ATTEMPT_VARS).
PATH_VARS = ("CUDA_COREDUMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE")


class GpuDebugError(ValueError):
    """A value of `environment.debug` that cannot be used; `key` is the field."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@frozen
class GpuDebug:
    """The resolved `environment.debug` of one cell; every field off by default."""

    launch_blocking: bool = False
    cuda_coredump: CoreDump | None = None
    compute_sanitizer: str | None = None  # one of SANITIZER_TOOLS
    nccl_debug: str | None = None  # one of NCCL_LEVELS
    nccl_debug_subsys: str | None = None
    nccl_flight_recorder: int | None = None  # entries kept per rank

    @property
    def any(self) -> bool:
        # Against one default made once: asked a few times per attempt.
        return self != _NO_DEBUG

    @classmethod
    def from_section(cls, section: Mapping[str, object]) -> GpuDebug:
        """A resolved `environment.debug` mapping -> GpuDebug (false, null and off: off)."""
        blocking = _off(section.get("launch_blocking"))
        if blocking is not None and not isinstance(blocking, bool):
            raise GpuDebugError("launch_blocking", f"expected true or false, got {blocking!r}")
        core = _off(section.get("cuda_coredump"))
        if core is True:
            core = "lightweight"
        if core is not None and core not in ("lightweight", "full"):
            raise GpuDebugError(
                "cuda_coredump", f"expected true, lightweight, full or false, got {core!r}"
            )
        tool = _off(section.get("compute_sanitizer"))
        if tool is not None and tool not in SANITIZER_TOOLS:
            raise GpuDebugError(
                "compute_sanitizer",
                f"expected one of {', '.join(SANITIZER_TOOLS)} or false, got {tool!r}",
            )
        level = _off(section.get("nccl_debug"))
        if level is True:
            level = "INFO"
        if level is not None and level not in NCCL_LEVELS:
            raise GpuDebugError(
                "nccl_debug", f"expected one of {', '.join(NCCL_LEVELS)} or false, got {level!r}"
            )
        subsys = _off(section.get("nccl_debug_subsys"))
        if subsys is not None and not isinstance(subsys, str):
            raise GpuDebugError("nccl_debug_subsys", f"expected a string, got {subsys!r}")
        recorder = _off(section.get("nccl_flight_recorder"))
        if recorder is True:
            recorder = DEFAULT_FLIGHT_RECORDER_ENTRIES
        if recorder is not None and (
            isinstance(recorder, bool) or not isinstance(recorder, int) or recorder < 1
        ):
            raise GpuDebugError(
                "nccl_flight_recorder",
                f"expected true, false or a number of entries >= 1, got {recorder!r}",
            )
        return cls(
            launch_blocking=bool(blocking),
            cuda_coredump=None if core is None else ("full" if core == "full" else "lightweight"),
            compute_sanitizer=None if tool is None else str(tool),
            nccl_debug=None if level is None else str(level),
            nccl_debug_subsys=subsys,
            nccl_flight_recorder=None if recorder is None else int(str(recorder)),
        )

    def to_json(self) -> JsonObject:
        """The toggles that are on (what cell.json, `plan` and the report show)."""
        out: JsonObject = {}
        values: tuple[tuple[str, str | int | bool | None], ...] = (
            ("launch_blocking", self.launch_blocking or None),
            ("cuda_coredump", self.cuda_coredump),
            ("compute_sanitizer", self.compute_sanitizer),
            ("nccl_debug", self.nccl_debug),
            ("nccl_debug_subsys", self.nccl_debug_subsys),
            ("nccl_flight_recorder", self.nccl_flight_recorder),
        )
        for key, value in values:
            if value is not None:
                out[key] = value
        return out

    def variables(self, attempt_dir: str) -> dict[str, str]:
        """The attempt's variables; their files named into `attempt_dir` as the child sees it."""
        env: dict[str, str] = {}
        if self.launch_blocking:
            env["CUDA_LAUNCH_BLOCKING"] = "1"
        if self.cuda_coredump is not None:
            env["CUDA_ENABLE_COREDUMP_ON_EXCEPTION"] = "1"
            # The host core of a multi-GB process would take minutes; the GPU core is the point.
            env["CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION"] = "0"
            env["CUDA_COREDUMP_SHOW_PROGRESS"] = "1"
            env["CUDA_COREDUMP_FILE"] = f"{attempt_dir}/{CORE_PATTERN}"
            if self.cuda_coredump == "lightweight":
                env["CUDA_COREDUMP_GENERATION_FLAGS"] = LIGHTWEIGHT_CORE_FLAGS
        if self.nccl_debug is not None:
            env["NCCL_DEBUG"] = self.nccl_debug
            if self.nccl_debug_subsys:
                env["NCCL_DEBUG_SUBSYS"] = self.nccl_debug_subsys
        if self.nccl_flight_recorder is not None:
            entries = str(self.nccl_flight_recorder)
            prefix = f"{attempt_dir}/{FLIGHT_RECORDER_PREFIX}"
            # torch 2.11-2.13 read TORCH_FR_* first and fall back to the TORCH_NCCL_* names.
            env["TORCH_NCCL_TRACE_BUFFER_SIZE"] = entries
            env["TORCH_FR_BUFFER_SIZE"] = entries
            env["TORCH_NCCL_DUMP_ON_TIMEOUT"] = "1"
            env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = prefix
            env["TORCH_FR_DUMP_TEMP_FILE"] = prefix
        return env


_NO_DEBUG = GpuDebug()


def sanitizer_argv(executable: str, tool: str, attempt_dir: str, argv: Sequence[str]) -> list[str]:
    """`argv` run under compute-sanitizer: its report to the attempt folder, its own exit status.

    `--log-file` keeps the program's stdout the program's own (the report is read from
    the file); `--error-exitcode` makes "errors found" an exit status no program uses by
    chance; `--target-processes all` follows a launcher's children (torchrun, a shell).
    """
    return [
        executable,
        "--tool", tool,
        "--log-file", f"{attempt_dir}/{SANITIZER_LOG}",
        "--error-exitcode", str(SANITIZER_ERROR_EXIT),
        "--target-processes", "all",
        "--print-limit", "100",
        *argv,
    ]  # fmt: skip


def conflicts(
    debug: GpuDebug, *, preload: Sequence[str] = (), env: Mapping[str, object] = {}
) -> list[tuple[tuple[str, ...], str]]:
    """(where in the spec, why) for each pair of one cell that cannot work together."""
    out: list[tuple[tuple[str, ...], str]] = []
    sanitizer = debug.compute_sanitizer
    if sanitizer is not None and debug.cuda_coredump is not None:
        out.append(
            (
                ("environment", "debug", "cuda_coredump"),
                f"cannot pair with compute_sanitizer: {sanitizer}: "
                "compute-sanitizer handles the faults itself and no GPU core is written; "
                "make them two cells",
            )
        )
    if sanitizer is not None and preload:
        out.append(
            (
                ("run", "preload"),
                f"cannot pair with environment.debug.compute_sanitizer: {sanitizer}: the "
                "attempt must start under compute-sanitizer, not be forked from a server that "
                "imported torch without it",
            )
        )
    if sanitizer is not None and debug.launch_blocking:
        out.append(
            (
                ("environment", "debug", "launch_blocking"),
                f"adds nothing to compute_sanitizer: {sanitizer}, which "
                "checks every launch as it runs; make them two cells",
            )
        )
    ours = set(debug.variables(""))
    for name in sorted(ours & set(env)):
        out.append(
            (
                ("environment", "env", name),
                "set by environment.debug in this cell too; set it in one place",
            )
        )
    if sanitizer is not None:
        for name in sorted((set(COREDUMP_VARS) & set(env)) - ours):
            out.append(
                (
                    ("environment", "env", name),
                    f"has no effect under environment.debug.compute_sanitizer: {sanitizer} "
                    "(compute-sanitizer ignores the core dump variables)",
                )
            )
    return out


def _off(value: object) -> object:
    """None for every spelling of "off" a matrix axis may hold (false, null, "off", "")."""
    if value is None or value is False:
        return None
    if isinstance(value, str) and value.strip().lower() in ("", "off", "false", "none", "no"):
        return None
    return value


def left_findings(names: Iterable[str], stderr: str) -> bool:
    """Whether an attempt's folder (its names) or stderr holds anything the diagnostics
    leave: the one test every attempt pays, so that the readers (outcome/gpufindings.py and
    theirs) are imported only where it is true (issue 30, item 4)."""
    return DRIVER_COREDUMP_MARK in stderr or any(
        name in (SANITIZER_LOG, CUDA_GDB_FILES[0]) or name.startswith(FLIGHT_RECORDER_PREFIX)
        for name in names
    )
