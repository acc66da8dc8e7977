"""A CUDA core dump read back: the exception, the faulting kernel, its PC, who hit it.

Two sources, both recorded on an H200 (tests/data/gpu/coredump/):

- the driver's own progress lines on the program's stderr, which
  `CUDA_COREDUMP_SHOW_PROGRESS=1` (environment.debug.cuda_coredump sets it) makes it
  print as it writes the core: `Detected an exception of type
  CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)`, the SM, the warp, the PC, the kernel's
  mangled name in a `Stack trace` (when the warp still existed), and `Writing ELF file
  to PATH`. Always there when a core was written, with no debugger needed.
- cuda-gdb's batch output on the core (`target cudacore CORE`, then `info cuda
  kernels`, `bt`, ...): `CUDA Exception: Warp Illegal Address`, `The exception was
  triggered at PC 0x... oob_store  (fault.py:43)`, the focus (kernel, block, thread),
  `#0 0x... in KERNEL<<<grid,block>>> ()`, the lanes table's `Exception` column.

cuda-gdb 13.0 aborted (exit 134) on two of the three recorded cores: the Triton kernel's
illegal address in a forward and in a backward. The driver had said "Warp: exception was
detected after the warp has exited" for both, and cuda-gdb then threw
`std::out_of_range` (`__n (which is 4294967294) >= this->size() (which is 64)`: warp
index -2 against the H200's 64 warps per SM) inside
`cuda_exception::print_cuda_exception_string`, while opening the core. It had printed
the exception and the PC line whole before it died. A reading keeps only what came in
whole lines before the abort, names the abort as its `problem`, and never guesses a
kernel from anything else: no kernel named means `kernel` is None.
"""

from __future__ import annotations

import re

from reprospec.core.frozen import frozen
from reprospec.outcome.cxxterminate import uncaught_cxx
from reprospec.outcome.sanitizerlog import short_kernel

# The driver's exception types (cudadebugger.h CUDBG_EXCEPTION_*), as cuda-gdb words them.
_EXCEPTION_WORDS = {
    "WARP_ILLEGAL_ADDRESS": "Warp Illegal Address",
    "WARP_ASSERT": "Warp Assert",
    "WARP_MISALIGNED_ADDRESS": "Warp Misaligned Address",
    "WARP_INVALID_ADDRESS_SPACE": "Warp Invalid Address Space",
    "WARP_INVALID_PC": "Warp Invalid PC",
    "WARP_HARDWARE_STACK_OVERFLOW": "Warp Hardware Stack Overflow",
    "DEVICE_ILLEGAL_ADDRESS": "Device Illegal Address",
    "LANE_ILLEGAL_ADDRESS": "Lane Illegal Address",
    "LANE_MISALIGNED_ADDRESS": "Lane Misaligned Address",
    "LANE_USER_STACK_OVERFLOW": "Lane User Stack Overflow",
    "WARP_ILLEGAL_INSTRUCTION": "Warp Illegal Instruction",
    "WARP_OUT_OF_RANGE_ADDRESS": "Warp Out-of-range Address",
}

# The driver's progress lines: `[17:42:34.712014] coredump: ...`
_DRIVER = re.compile(r"^\[[\d:.]+\] coredump: (?P<said>.*)$")
_DETECTED = re.compile(r"^Detected an exception of type CUDBG_EXCEPTION_(?P<type>\w+) \(\d+\)")
_SM = re.compile(r"^\s*- SM: (?P<sm>\d+)")
_WARP = re.compile(r"^\s*- Warp: (?P<warp>.+)$")
_PC = re.compile(r"^\s*- PC (?P<pc>0x[0-9a-fA-F]+)")
_STACK0 = re.compile(r"^\s*#0\s+(?P<pc>0x[0-9a-fA-F]+)\s+(?P<symbol>\S+)")
_WRITING = re.compile(r"^Writing ELF file to (?P<path>.+)$")

# cuda-gdb's lines.
_GDB_EXCEPTION = re.compile(r"^CUDA Exception: (?P<exception>.+?)\s*$")
_GDB_TRIGGERED = re.compile(
    r"^The exception was triggered at PC (?P<pc>0x[0-9a-fA-F]+)\s+(?P<func>\S.*?)"
    r"(?:\s+\((?P<source>[^()]+:\d+)\))?\s*$"
)
_GDB_FOCUS = re.compile(
    r"^\[Current focus set to CUDA kernel (?P<kernel>\d+), grid \d+, block (?P<block>\([\d,]+\)), "
    r"thread (?P<thread>\([\d,]+\)), device \d+, sm (?P<sm>\d+), warp (?P<warp>\d+)"
)
_GDB_FRAME0 = re.compile(
    r"^#0\s+(?P<pc>0x[0-9a-fA-F]+) in (?P<func>.+?)(?:<<<.*)?(?: \(\))?"
    r"(?: at (?P<source>\S+:\d+))?\s*$"
)
_GDB_LANE = re.compile(
    r"^\*\s+\d+\s+active\s+(?P<pc>0x[0-9a-fA-F]+)\s+\([\d,]+\)\s+(?P<exception>\S.*?)\s*$"
)
_GDB_FATAL = "A fatal error internal to GDB has been detected"
_GDB_BT = re.compile(r"^0x[0-9a-f]+ (?P<symbol>_Z\S+)$")


@frozen
class CoreReading:
    """What a GPU core dump says, from one source (`driver` or `cuda-gdb`).

    `kernel` is the faulting kernel as named (demangled by cuda-gdb, mangled by the
    driver); `problem` is why the reading is incomplete (cuda-gdb aborted, no core).
    """

    source: str
    exception: str | None = None
    kernel: str | None = None
    pc: str | None = None
    where: str | None = None  # the kernel's file:line
    sm: int | None = None
    warp: str | None = None
    block: str | None = None
    thread: str | None = None
    core: str | None = None  # the core file the driver wrote
    problem: str | None = None

    @property
    def kernel_name(self) -> str | None:
        """The kernel's short name (`oob_store`, `at::native::index_elementwise_kernel`)."""
        if not self.kernel:
            return None
        return short_kernel(demangle(self.kernel) or self.kernel)

    def describe(self) -> str:
        """`Warp Illegal Address in oob_store (fault.py:43) at PC 0x7f5e...`."""
        text = self.exception or "a GPU exception"
        if self.kernel_name:
            text += f" in {self.kernel_name}"
            if self.where:
                text += f" ({self.where})"
        if self.pc:
            text += f" at PC {self.pc}"
        if self.block or self.thread:
            text += f", thread {self.thread or '?'} of block {self.block or '?'}"
        elif self.sm is not None:
            text += f", SM {self.sm}"
            if self.warp:
                text += f" warp {self.warp}"
        return text


def read_driver(stderr: str) -> CoreReading | None:
    """The driver's progress lines in `stderr`; None when it wrote no core dump there."""
    fields: dict[str, str] = {}
    detected = False
    for line in stderr.splitlines():
        said = _DRIVER.match(line.strip())
        if said is None:
            continue
        text = said["said"]
        if (m := _DETECTED.match(text)) is not None:
            if detected:
                continue  # the first exception is the one reported
            detected = True
            fields["exception"] = _EXCEPTION_WORDS.get(
                m["type"], m["type"].replace("_", " ").title()
            )
        elif detected and (m := _SM.match(text)) and "sm" not in fields:
            fields["sm"] = m["sm"]
        elif detected and (m := _WARP.match(text)) and "warp" not in fields:
            fields["warp"] = m["warp"]
        elif detected and (m := _PC.match(text)) and "pc" not in fields:
            fields["pc"] = m["pc"]
        elif detected and (m := _STACK0.match(text)) and "kernel" not in fields:
            fields["kernel"] = m["symbol"]
        elif (m := _WRITING.match(text)) is not None:
            fields["core"] = m["path"].strip()
    if not detected and "core" not in fields:
        return None
    warp = fields.get("warp")
    return CoreReading(
        source="driver",
        exception=fields.get("exception"),
        kernel=fields.get("kernel"),
        pc=fields.get("pc"),
        sm=int(fields["sm"]) if "sm" in fields else None,
        warp="exited" if warp and "exited" in warp else warp,
        core=fields.get("core"),
    )


def read_cuda_gdb(stdout: str, stderr: str, returncode: int | None) -> CoreReading:
    """cuda-gdb's batch output on a core; its abort or failure is the reading's `problem`."""
    fields: dict[str, str] = {}
    for line in stdout.splitlines():
        if (m := _GDB_EXCEPTION.match(line)) is not None:
            fields.setdefault("exception", m["exception"])
        elif (m := _GDB_TRIGGERED.match(line)) is not None:
            fields.setdefault("pc", m["pc"])
            fields.setdefault("kernel", m["func"])
            if m["source"]:
                fields.setdefault("where", m["source"])
        elif (m := _GDB_FOCUS.match(line)) is not None:
            fields.setdefault("block", m["block"])
            fields.setdefault("thread", m["thread"])
            fields.setdefault("sm", m["sm"])
            fields.setdefault("warp", m["warp"])
        elif (m := _GDB_FRAME0.match(line)) is not None:
            fields.setdefault("pc", m["pc"])
            fields.setdefault("kernel", m["func"])
            if m["source"]:
                fields.setdefault("where", m["source"])
        elif (m := _GDB_LANE.match(line)) is not None:
            fields.setdefault("exception", m["exception"])
    problem = _gdb_problem(stdout, stderr, returncode)
    return CoreReading(
        source="cuda-gdb",
        exception=fields.get("exception"),
        kernel=fields.get("kernel"),
        pc=fields.get("pc"),
        where=fields.get("where"),
        sm=int(fields["sm"]) if "sm" in fields else None,
        warp=fields.get("warp"),
        block=fields.get("block"),
        thread=fields.get("thread"),
        problem=problem,
    )


def _gdb_problem(stdout: str, stderr: str, returncode: int | None) -> str | None:
    """Why cuda-gdb's reading is incomplete, in its own words; None when it ran through."""
    fatal = _GDB_FATAL in stderr or returncode in (134, -6)
    if not fatal and returncode in (0, None):
        if "Opening GPU coredump" in stdout or stdout.strip():
            return None
        return "cuda-gdb printed nothing"
    if not fatal:
        last = [line.strip() for line in (stderr or stdout).splitlines() if line.strip()]
        return f"cuda-gdb exited {returncode}: {last[-1][:200] if last else 'no output'}"
    where = None
    for line in stderr.splitlines():
        if (m := _GDB_BT.match(line.strip())) is not None:
            name = demangle(m["symbol"])
            if name and "cuda" in name.lower():
                where = name
                break
    said = "cuda-gdb aborted with an internal error"
    # std::terminate's report of what cuda-gdb threw (cxxterminate.py, every abort's reader).
    thrown = uncaught_cxx(stderr)
    if thrown is not None:
        said += f" ({thrown.type}: {thrown.message})" if thrown.message else f" ({thrown.type})"
    if where:
        said += f" in {where}"
    return said + " while reading the core; what it printed before that is kept"


_SOURCE_NAME = re.compile(r"(\d+)")


def demangle(symbol: str) -> str | None:
    """An Itanium-mangled name's qualified name (`_ZNK14cuda_exception27print_...Ev` ->
    `cuda_exception::print_cuda_exception_string`), parameters left out; None if not one."""
    if not symbol.startswith("_Z"):
        return None
    text = symbol[2:]
    nested = text.startswith("N")
    if nested:
        text = text[1:]
        while text[:1] in ("K", "V", "r"):
            text = text[1:]
    elif text.startswith("L"):
        text = text[1:]
    parts: list[str] = []
    while text and text[0].isdigit():
        m = _SOURCE_NAME.match(text)
        assert m is not None
        length = int(m[1])
        start = len(m[1])
        parts.append(text[start : start + length])
        text = text[start + length :]
        if not nested:
            break
    return "::".join(parts) if parts else None


__all__ = ["CoreReading", "demangle", "read_cuda_gdb", "read_driver"]
