"""compute-sanitizer's report read back: its error records and its summary.

compute-sanitizer (memcheck, racecheck, initcheck, synccheck) writes every line of its
own with the prefix `========= `, the program's output in between unprefixed; with
`--log-file` (as reprospec runs it) only its own lines go to the file. A record is a
headline at the first indentation, then indented detail lines, then a bare
`=========` line. Recorded on an H200 (tests/data/gpu/sanitizer/):

    ========= Invalid __global__ write of size 4 bytes
    =========     at write_wild(float *, long long)+0xa0 in kernels.cu:32
    =========     by thread (0,0,0) in block (0,0,0)
    =========     Access to 0x8f4f2e800000 is out of bounds
    =========     and is 17,592,047,631,873 bytes after the nearest allocation at ...
    =========     Saved host backtrace up to driver entry point at kernel launch time
    =========         Host Frame: main [0x90f5] in kernels
    =========
    ========= ERROR SUMMARY: 33 errors

What the recording showed, and this reader follows:
- racecheck words its records differently (`Error: Race reported between Write access
  at K+0x90 in f:37` / `and Read access at ...`, or with `--racecheck-report all` one
  `Error: Potential RAW hazard detected at __shared__ 0x400 in block (0,0,0) :` per
  hazard with `Write Thread (0,0,0) at ...`) and ends with `RACECHECK SUMMARY: 1 hazard
  displayed (1 error, 0 warnings)`: the errors are the count in brackets.
- `ERROR SUMMARY` comes twice when the print limit cut records: `1026 errors`, then
  `926 errors were not printed`.
- a device-side assert is `Warp assert` at `__assertfail`, a bad `__syncwarp` is reported
  in `__syncwarp` with the kernel as a `Device Frame:` below it: the kernel is the
  outermost device function that is not a CUDA intrinsic (`__name`), and none when
  only intrinsics are named (never the intrinsic as the kernel).
- `Program hit cudaErrorAssert (error 710) ... on CUDA API call to cudaDeviceSynchronize.`
  is a record of the host API call, with no kernel.
- a one-element-past-the-end write that lands in the next allocation is no error to
  memcheck (`kernels oob`: 0 errors; the neighbour buffer changed): 0 errors is not "no bug".
- `--xml --save F` with no error wrote `<ComputeSanitizerOutput/>` and nothing else.
"""

from __future__ import annotations

import re

from reprospec.core.frozen import frozen

PREFIX = "========="
_AT = re.compile(r"^at (?P<func>.+?)\+(?P<offset>0x[0-9a-fA-F]+)(?: in (?P<source>\S+:\d+))?$")
_BY = re.compile(r"^by thread (?P<thread>\([\d,]+\)) in block (?P<block>\([\d,]+\))$")
_SIZE = re.compile(r" of size (?P<size>\d+) bytes?\b")
_ACCESS = re.compile(r"^Access to (?P<address>0x[0-9a-fA-F]+)\b")
_ADDRESS = re.compile(r"^Address (?P<address>0x[0-9a-fA-F]+)\b")
_FRAME = re.compile(r"^(?P<where>Device|Host) Frame:\s*(?P<frame>.*)$")
_HAZARD = re.compile(
    r"^Error: Potential (?P<hazard>\w+) hazard detected at (?P<space>\S+) "
    r"(?P<address>0x[0-9a-fA-F]+) in block (?P<block>\([\d,]+\))"
)
_THREAD_AT = re.compile(
    r"^(?P<access>Write|Read|Atomic)\s+(?:Thread (?P<thread>\([\d,]+\)) at |access at )"
    r"(?P<func>.+?)\+(?P<offset>0x[0-9a-fA-F]+)(?: in (?P<source>\S+:\d+))?"
)
_RACE = re.compile(
    r"^Error: Race reported between (?P<access>\w+) access at (?P<func>.+?)\+"
    r"(?P<offset>0x[0-9a-fA-F]+)(?: in (?P<source>\S+:\d+))?$"
)
_AND = re.compile(r"^and (\w+) access at ")
_ERRORS = re.compile(r"^ERROR SUMMARY: (?P<n>[\d,]+) errors?$")
_NOT_PRINTED = re.compile(r"^ERROR SUMMARY: (?P<n>[\d,]+) errors? were not printed")
_RACECHECK = re.compile(
    r"^RACECHECK SUMMARY: (?P<shown>[\d,]+) hazards? displayed "
    r"\((?P<errors>[\d,]+) errors?, (?P<warnings>[\d,]+) warnings?\)"
)
_OWN = ("COMPUTE-SANITIZER", "Target application returned an error")
_NEVER_STARTED = "Target application terminated before first instrumented API call"


@frozen
class SanitizerRecord:
    """One error record: what went wrong, in which kernel, by which thread, where.

    `kind` is the headline as printed (`Invalid __global__ write of size 4 bytes`,
    `Barrier error detected. Divergent thread(s) in warp.`). `kernel` is the device
    function the record blames (see the module doc), with `source` its file:line;
    `function` the innermost one named (`__syncwarp(unsigned int)`). `details` keeps
    the other lines (`and is N bytes after the nearest allocation ...`).
    """

    kind: str
    kernel: str | None = None
    function: str | None = None
    offset: str | None = None
    source: str | None = None
    thread: str | None = None
    block: str | None = None
    address: str | None = None
    size: int | None = None
    details: tuple[str, ...] = ()
    device_frames: tuple[str, ...] = ()
    host_frames: tuple[str, ...] = ()

    def describe(self) -> str:
        """`Invalid __global__ write of size 4 bytes in oob_store (fault.py:43) by thread ...`."""
        text = self.kind.rstrip(" :.")
        if self.kernel:
            text += f" in {short_kernel(self.kernel)}"
            if self.source:
                text += f" ({self.source})"
        if self.thread or self.block:
            text += f", thread {self.thread or '?'} of block {self.block or '?'}"
        if self.address:
            text += f", at {self.address}"
        return text


@frozen
class SanitizerReport:
    """Everything compute-sanitizer said: its records, its counts, whether the program ran."""

    records: tuple[SanitizerRecord, ...] = ()
    errors: int | None = None  # the summary's count (every error, printed or not)
    not_printed: int | None = None
    warnings: int | None = None  # racecheck's
    # `Target application terminated before first instrumented API call`: nothing checked.
    never_started: bool = False
    seen: bool = False  # it printed anything of its own at all

    @property
    def kernels(self) -> tuple[str, ...]:
        """The kernels blamed, short names, most blamed first."""
        counts: dict[str, int] = {}
        for record in self.records:
            if record.kernel:
                name = short_kernel(record.kernel)
                counts[name] = counts.get(name, 0) + 1
        return tuple(sorted(counts, key=lambda k: -counts[k]))

    def _counted(self) -> str:
        """`1,026 errors, 3 warnings`: what the tool counted (its own total where it printed
        one, else the records read)."""
        from reprospec.core.words import noun  # words is not read to import this module

        count = self.errors if self.errors is not None else len(self.records)
        said = f"{count:,} {noun(count, 'error')}"
        if self.warnings:
            said += f", {self.warnings:,} {noun(self.warnings, 'warning')}"
        return said

    def summary(self) -> str:
        """The counts and the kernels blamed: `1,026 errors (926 not printed), in oob_store`."""
        if self.never_started:
            return self.headline()
        said = self._counted()
        if self.not_printed:
            said += f" ({self.not_printed:,} not printed)"
        if self.kernels:
            said += f", in {', '.join(self.kernels)}"
        return said

    def headline(self) -> str:
        """One line: the count and the first record (`33 errors; first: Invalid ...`)."""
        if self.never_started:
            return "the program never reached its first CUDA call: nothing was checked"
        said = self._counted()
        first = next(
            (r for r in self.records if r.kernel), self.records[0] if self.records else None
        )
        if first is not None:
            said += f"; first: {first.describe()}"
        return said


def parse(text: str) -> SanitizerReport:
    """compute-sanitizer's own lines in `text` (its log file, or stdout with the program's)."""
    records: list[SanitizerRecord] = []
    errors = not_printed = warnings = None
    never_started = seen = False
    block: list[str] | None = None
    for raw in text.splitlines():
        if not raw.startswith(PREFIX):
            continue  # the program's own output
        seen = True
        body = raw[len(PREFIX) :]
        body = body[1:] if body.startswith(" ") else body
        if not body.strip():
            if block:
                records.append(_record(block))
            block = None
            continue
        if body.startswith(" "):
            if block is not None:
                block.append(body)
            continue
        if block:
            records.append(_record(block))  # a record without its closing line
        block = None
        line = body.strip()
        if (m := _NOT_PRINTED.match(line)) is not None:
            not_printed = _int(m["n"])
        elif (m := _ERRORS.match(line)) is not None:
            errors = _int(m["n"])
        elif (m := _RACECHECK.match(line)) is not None:
            errors, warnings = _int(m["errors"]), _int(m["warnings"])
        elif _NEVER_STARTED in line:
            never_started = True
        elif not any(line.startswith(own) for own in _OWN):
            block = [line]
    if block:
        records.append(_record(block))
    return SanitizerReport(
        tuple(records), errors, not_printed, warnings, never_started=never_started, seen=seen
    )


def _record(lines: list[str]) -> SanitizerRecord:
    headline = lines[0].strip()
    fields: dict[str, str | None] = {}
    details: list[str] = []
    device: list[str] = []
    host: list[str] = []
    kind = headline.removeprefix("Error: ").rstrip(" :")
    if (m := _HAZARD.match(headline)) is not None:
        fields.update(address=m["address"], block=m["block"])
        kind = f"Potential {m['hazard']} hazard on {m['space']} memory"
    elif (m := _RACE.match(headline)) is not None:
        fields.update(function=m["func"], offset=m["offset"], source=m["source"])
        other = next((o[1] for line in lines[1:] if (o := _AND.match(line.strip()))), None)
        kind = f"Race between a {m['access']} access and a {other or 'other'} access"
    for line in (text.strip() for text in lines[1:]):
        if (m := _FRAME.match(line)) is not None:
            (device if m["where"] == "Device" else host).append(m["frame"].strip())
        elif (m := _AT.match(line)) is not None:
            fields.update(function=m["func"], offset=m["offset"], source=m["source"])
        elif (m := _BY.match(line)) is not None:
            fields.update(thread=m["thread"], block=m["block"])
        elif (m := _ACCESS.match(line) or _ADDRESS.match(line)) is not None:
            fields["address"] = m["address"]
            if line.startswith("Access"):
                details.append(line)
        elif (m := _THREAD_AT.match(line)) is not None:
            if fields.get("function") is None:
                fields.update(function=m["func"], offset=m["offset"], source=m["source"])
            if m["thread"] and fields.get("thread") is None:
                fields["thread"] = m["thread"]
            details.append(line)
        elif not line.startswith("Saved host backtrace"):
            details.append(line)
    size = _SIZE.search(headline)
    function = fields.get("function")
    kernel, source = _kernel(function, fields.get("source"), device)
    return SanitizerRecord(
        kind=kind,
        kernel=kernel,
        function=function,
        offset=fields.get("offset"),
        source=source,
        thread=fields.get("thread"),
        block=fields.get("block"),
        address=fields.get("address"),
        size=int(size["size"]) if size else None,
        details=tuple(details),
        device_frames=tuple(device),
        host_frames=tuple(host),
    )


_DEVICE_FRAME = re.compile(r"^(?P<func>.+?)\+0x[0-9a-fA-F]+(?: in (?P<source>\S+:\d+))?$")


def _kernel(
    function: str | None, source: str | None, device_frames: list[str]
) -> tuple[str | None, str | None]:
    """The outermost device function that is not an intrinsic, and its source line."""
    named: list[tuple[str, str | None]] = []
    if function:
        named.append((function, source))
    for frame in device_frames:
        if (m := _DEVICE_FRAME.match(frame)) is not None:
            named.append((m["func"], m["source"]))
    for func, where in reversed(named):
        if not short_kernel(func).startswith("__"):
            return func, where
    return None, None


def short_kernel(name: str) -> str:
    """A kernel's name without return type, template arguments and parameters.

    `void at::native::reduce_kernel<(int)512, ...>(T3)` -> `at::native::reduce_kernel`,
    `write_wild(float *, long long)` -> `write_wild`: the same kernel reads the same in
    a signature whatever its instantiation.
    """
    text = name.strip()
    text = re.sub(r"<<<.*$", "", text)
    out: list[str] = []
    depth = 0
    for char in text:
        if char in "<(":
            depth += 1
        elif char in ">)" and depth:
            depth -= 1
        elif depth == 0:
            out.append(char)
    short = "".join(out).strip()
    for prefix in ("void ", "static "):
        short = short.removeprefix(prefix)
    return short.split(" ")[-1] if " " in short else short


def _int(text: str) -> int:
    return int(text.replace(",", ""))


__all__ = ["SanitizerRecord", "SanitizerReport", "parse", "short_kernel"]
