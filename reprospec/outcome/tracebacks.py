"""Python tracebacks in a log: the exception that ended the process, its chain, fatal errors.

Whether the last uncaught-looking traceback did end the process is the exit
status's to say (outcome/classify.py); a traceback the process went on from
keeps only its exception's own lines (`went_on`).

CPython prints an uncaught exception as a `Traceback (most recent call last):`
block ending in `Type: message`; chained exceptions print several blocks joined
by "During handling of the above exception, another exception occurred:" or
"The above exception was the direct cause of the following exception:" (the
first is the primary, the last one is what ended the process), exception groups
prefix every line with `| `, and shutdown noise ("Exception ignored in ...",
atexit errors, threads) prints blocks of its own that must not pose as the real one.

faulthandler prints a crash as `Fatal Python error: Segmentation fault` and
the stack of the thread that took the signal (`Stack (most recent call first):`,
as the engine arms it), or of every thread (`Current thread 0x...`, `Thread
0x...`, under PYTHONFAULTHANDLER); such a block names no pid.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import replace
from typing import NamedTuple

from reprospec.core.frozen import frozen
from reprospec.core.lazyre import Lazy
from reprospec.core.logtext import TRACEBACK_HEADER, TRACEBACK_TITLE, without_escapes
from reprospec.core.results import bare_type
from reprospec.core.signals import signal_from_description

_MAX_MESSAGE_LINES = 30
# torch's ExceptionWrapper.reraise: the exception a DataLoader worker (or the pin-memory
# thread) raised, raised again in the main process as `Caught T in DataLoader worker process
# N.`, its message the worker's whole traceback (`Original Traceback (most recent call
# last):` ... `T: what went wrong`), which may run past _MAX_MESSAGE_LINES.
_RERAISED = Lazy(
    r"^Caught (?P<type>[A-Za-z_][\w.]*) in (?:DataLoader worker process \d+"
    r"|pin memory thread for device \d+)\.\s*$"
)
_MAX_RERAISED_LINES = 300

_TB_HEADER = Lazy(r"^(?:\s*\+ )?(?:Exception Group )?Traceback \(most recent call last\):\s*$")
# An exception group's first line as CPython prints it: `_headerless_group` puts it back
# above a group printed without it.
_GROUP_HEADER = "  + Exception Group Traceback (most recent call last):"


# The header of a DataLoader worker's own traceback in the message torch's reraise gives
# its exception (_RERAISED): the worker's frames, where the exception was raised.
_ORIGINAL_HEADER = "Original Traceback (most recent call last):"


def traceback_starts(lines: list[str]) -> list[int]:
    """Where each traceback of `lines` begins: a line that is this parser's header
    (`_TB_HEADER`: CPython's, an exception group's), and a DataLoader worker's own inside
    torch's reraise (`Original Traceback`). The one rule of a header, which capture's
    footprint asks too: a header's words inside a line (an exception's message quoting a
    child's output, `RuntimeError: child said: Traceback (most recent call last): ...`) and
    a group member's `| Traceback` begin none. A header glued to the end of a line that is
    no exception's (a tqdm bar's last draw, `\r 10%|#  | 1/10 [00:00<00:01]Traceback (most
    recent call last):`, common in an ML log) begins one where a frame line follows it."""
    # Every header holds TRACEBACK_HEADER: `in`, run in C without a copy, passes over the
    # other lines of a whole log before a regex, a strip or _glued's rstrip.
    return [
        index
        for index, line in enumerate(lines)
        if TRACEBACK_HEADER in line
        and (_TB_HEADER.match(line) or line.strip() == _ORIGINAL_HEADER or _glued(lines, index))
    ]


def _glued(lines: list[str], index: int) -> bool:
    """Whether `lines[index]` ends in CPython's header after other output (not an
    exception's message quoting it) and a traceback's frame line comes next."""
    line = lines[index].rstrip()
    if not line.endswith(TRACEBACK_HEADER) or index + 1 >= len(lines):
        return False
    before = line[: -len(TRACEBACK_HEADER)].strip()
    return STACK_FRAME.match(lines[index + 1]) is not None and not EXCEPTION_LINE.match(before)


def is_group_header(line: str) -> bool:
    """Whether a line is an exception group's traceback header (`_GROUP_HEADER`, its
    indentation aside): the one spelling, which pytest's report reader asks too."""
    return bool(_TB_HEADER.match(line)) and "Exception Group" in line


# An exception line, `Type: message` (`pkg.mod.Error`, `Error:`, `Error`): the one
# definition, which capture's ticket reader imports too.
EXCEPTION_LINE = Lazy(r"^(?P<type>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?::(?: (?P<message>.*))?)?$")
_GROUP_PREFIX = Lazy(r"^\s*\| ?")
# The first frame of every thread's traceback (threading.Thread._bootstrap_inner runs `run`).
_THREAD_BOOTSTRAP = Lazy(r'^\s*File "[^"]*threading\.py", line \d+, in _bootstrap_inner\s*$')
# The tag torch puts before each line of a distributed rank's output (`[rank0]:`, and
# `[default0]:` from torchrun's --tee): outcome/children strips it, and a log line may carry
# it (below).
RANK_TAG = r"\[(?P<kind>rank|default)(?P<rank>\d+)\]:"
# Lines that end an exception message: the next report; a logger, c10's `[W1207 ...]` (a
# plain python's process group prints `[rank0]:[W1207 ... ProcessGroupNCCL.cpp:1250]` at
# exit) and torch's Python loggers in glog's form, every level torch writes (V with
# TORCH_LOGS=+..., I, W, E, C; F from glog), e.g. torchrun's `W1207 08:01:13.909000 21127
# torch/distributed/elastic/multiprocessing/api.py:1028] Sending process ...`, which a
# failed rank's message ran on into; a warning.
# The lines that begin a report of an exception that ended no process, right above its
# first block: the one spelling, which ends a message, says whose a chain is
# (`_traceback_context`), which group is a thread's (`_headerless_group`), whose exception
# Python ignored (`_ignored_label`) and how many threads died (classify counts the label).
THREAD_LABEL = "Exception in thread"
_IGNORED = "Exception ignored"
IGNORED_LABELS = (_IGNORED, "Error in atexit")
_REPORT_LABELS = (THREAD_LABEL, *IGNORED_LABELS)
_MESSAGE_END = Lazy(
    r"^(?:During handling of the above exception|The above exception was the direct cause"
    rf"|{'|'.join(map(re.escape, _REPORT_LABELS))}|Fatal Python error|ERROR: Unexpected"
    rf"|(?:{RANK_TAG})?(?:\[[A-Z]\d{{4}} |[VIWEFC]\d{{4}} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] )"
    r"|\S+:\d+: \w*Warning:|\[\.\.\. \d+ bytes omitted)"
)
# A worker's traceback multiprocessing quotes between `"""` lines as its RemoteTraceback's
# message (concurrent.futures' and loky's _RemoteTraceback too), the cause of what the
# parent raised: inside the quotes, the closing `"""` ends the worker's message (it read
# 'bad item 2\n"""'); anywhere else a `"""` line is the message's own (a quoted block).
_QUOTES = Lazy(r'^"""\s*$')
_REMOTE_TRACEBACK = Lazy(r"^[A-Za-z_][\w.]*RemoteTraceback:?\s*$")
_MAX_QUOTED_LINES = 1000  # how far back a traceback's header looks for the opening quotes
# CPython's last resort when it cannot print a traceback (e.g. "lost sys.stderr").
_OBJECT_DUMP_TYPE = Lazy(r"^object type name: (?P<type>\S+)\s*$", re.M)
_OBJECT_DUMP_REPR = Lazy(r"^object repr\s*: (?P<repr>.*)$", re.M)


# A chain's link lines, as CPython prints them between its blocks (and pytest between a
# chained failure's sections, at the margin): the one spelling, which pytest's report reader
# reads too.
CHAIN_LINKS = {
    "During handling of the above exception, another exception occurred:": "context",
    "The above exception was the direct cause of the following exception:": "cause",
}
# The line a faulthandler report begins with, the one definition of it the engine reads
# (a report's signal: FatalError.signal).
FATAL_HEADER = "Fatal Python error: "
_FATAL = Lazy(rf"^{FATAL_HEADER}(?P<description>.+?)\s*$")
# The lines of a faulthandler dump after its header: thread headers, frames, notes (also
# a `Timeout (h:mm:ss)!` dump's, outcome/watchdog.py).
FATAL_BODY = Lazy(
    r"^(?:\s*$|(?:Current thread|Thread) 0x[0-9a-fA-F]+ |Stack \(most recent call first\):"
    r"|  File \"|  <no Python frame>"
    r"|  \.\.\.|  Garbage-collecting|Extension modules: |Python runtime state: )"
)


@frozen
class PythonException:
    """The exception line of a printed traceback: type as printed, message (may span lines).

    `link`: how this exception led to the next one of its chain, "cause" (`raise
    ... from`) or "context" (raised while handling it); None for the last one.
    `members`: an exception group's (`ExceptionGroup`, `BaseExceptionGroup`, a subclass:
    an `asyncio.TaskGroup`'s failure), the exceptions it holds as its `| `-prefixed
    sub-tracebacks print them, a nested group's in its place (its leaves, depth first);
    () for any other exception, and for a group printed with none that can be read.
    """

    type: str
    message: str | None
    link: str | None = None
    members: tuple[PythonException, ...] = ()


@frozen
class FatalError:
    """A faulthandler report: `Fatal Python error: <description>` and the stacks under it."""

    description: str
    stack: str

    @property
    def signal(self) -> str | None:
        """The signal the report names (`Segmentation fault` -> SIGSEGV); None for a fatal
        error of another kind (`_enter_buffered_busy: could not acquire lock`)."""
        return signal_from_description(self.description)


def parse_exception(text: str) -> PythonException | None:
    """The exception of the last uncaught traceback in `text` (chained: the last one)."""
    chain = parse_chain(text)
    return chain[-1] if chain else None


# rich's traceback (`rich.traceback.install()`, typer's and many CLIs' default): a box
# whose title is CPython's header, a `PATH:LINE in FUNCTION` line per frame inside it, then
# the exception line under it as CPython prints it. Read as no traceback, the error was
# `error exit 1` with its message `ValueError: ...`, and a ticket's paste no failure at all.
_RICH_HEADER = Lazy(r"^\s*[╭┌]─+ Traceback \(most recent call last\) ─+[╮┐]\s*$")
_RICH_FRAME = Lazy(r"^(?P<file>\S.*?):(?P<line>\d+) in (?P<function>\S+)$")
_RICH_END = Lazy(r"^\s*[╰└]─+[╯┘]\s*$")
# A line inside the box: its content between `│ ` and ` │`.
_RICH_INSIDE = Lazy(r"^\s*│ ?(?P<content>.*?)\s*│\s*$")
# A source line (`❱ 14 main()`, `  11 │   if bs > 8:`): never part of a frame's folded path.
_RICH_SOURCE = Lazy(r"^(?:❱\s*)?\d+\s")
# Where rich wrapped a frame's line at a space: after its line number, or after `in`.
_RICH_WRAPPED = Lazy(r":\d+(?: in)?$")
# A frame of no file (`<string>`), which rich writes `in FUNCTION:LINE`.
_RICH_NO_FILE = Lazy(r"^in \S+:\d+$")
# The corners a box's top can start with: rich's ROUNDED, and the SQUARE it prints on a
# legacy Windows console.
RICH_BOX_CORNERS = ("╭", "┌")
# rich's title, which CPython's TRACEBACK_HEADER (with its colon) does not match.
RICH_TRACEBACK_TITLE = f"{TRACEBACK_TITLE} ─"


def unboxed(lines: list[str]) -> list[str]:
    """`lines` with each rich traceback box written as CPython writes a traceback: its
    header, then a `File "PATH", line N, in FUNCTION` line per frame (the box's source
    lines and locals left out). Lines with no box are returned as they are.

    A frame whose path is too long for the box rich folds over two or more lines: they
    are joined up to a blank box line or a source line before they are read (one line
    alone read `/very/long/pa` + `th/module.py:2` as a file `th/module.py`). A box ends at
    its `╰` line, or at the first line that is no box line (head+tail stderr cut inside
    one, a program killed while it printed one): that line is read as any other."""
    out: list[str] = []
    inside = False
    pending: list[str] = []

    def flush() -> None:
        if pending:
            joined = pending[0]
            for piece in pending[1:]:
                # Folded inside a word (a path): no space; wrapped at one (`:1736 in` +
                # `_call_impl`, `:1736` + `in f`): the space rich dropped.
                joined += " " + piece if _RICH_WRAPPED.search(joined) else piece
            frame = _RICH_FRAME.match(joined)
            if frame is not None:
                out.append(
                    f'  File "{frame["file"]}", line {frame["line"]}, in {frame["function"]}'
                )
            pending.clear()

    for line in lines:
        if inside:
            if _RICH_END.match(line):
                flush()
                inside = False
                continue
            boxed = _RICH_INSIDE.match(line)
            if boxed is not None:
                content = boxed["content"]
                if not content.strip() or _RICH_SOURCE.match(content.lstrip()):
                    flush()
                elif content.startswith(("╭", "│", "╰")) or _RICH_NO_FILE.match(content):
                    flush()  # a locals panel; a frame of no file (`in <lambda>:3`)
                else:
                    pending.append(content)
                continue
            flush()
            inside = False
        if _RICH_HEADER.match(line):
            out.append("Traceback (most recent call last):")
            inside = True
        else:
            out.append(line)
    flush()
    return out


def parse_chain(text: str) -> tuple[PythonException, ...]:
    """The exceptions of the last uncaught traceback's chain, primary first; () when none."""
    if not text:  # a silent attempt: no pattern to compile (core/lazyre.py)
        return ()
    lines = _lines(text)
    return _uncaught(text, lines, _chains(lines))


def _uncaught(text: str, lines: list[str], chains: list[_Chain]) -> tuple[PythonException, ...]:
    """`parse_chain` of `text`, its lines and chains read already (`last_printed` reads
    them once for both this and `_last_other`)."""
    uncaught = [chain for chain in chains if chain.context == "uncaught"]
    # A group printed with no traceback after the last uncaught chain's last block (that
    # one printed handled, `traceback.print_exc()`, then `sys.tracebacklimit = 0`) is what
    # ended the process. (Its first member's rule, `+-+---`, is in the text: else no line
    # is read for it.)
    after = uncaught[-1].last if uncaught else -1
    group = _headerless_group(lines, after) if "+-+-" in text else None
    if uncaught and group is None:
        return tuple(uncaught[-1].exceptions)
    compile_error = _compile_error(lines) if not uncaught else None
    if compile_error is not None:
        return (compile_error,)
    if group is not None:
        return (group,)
    # An exception in a thread ends its thread, never the process (`thread_exceptions`
    # reads them, for the report); "Exception ignored" reports never end it either.
    dumped = _OBJECT_DUMP_TYPE.search(text)
    if dumped:
        shown = _OBJECT_DUMP_REPR.search(text)
        return (PythonException(dumped["type"], shown["repr"].strip() if shown else None),)
    return ()


def recorded_chain(record: str) -> tuple[PythonException, ...]:
    """The chain of the exception a program's own record says its main thread died of
    (stackdump's `raised-PID.txt`, past its first line: what the interpreter's hook
    printed for it, and nothing else), primary first; () when it holds none.

    A program that set `sys.tracebacklimit = 0` (a CLI hiding its tracebacks from its
    users) prints no traceback: only each exception's own lines (`ValueError: bad`),
    joined by the chain's link lines. On stderr such a line may be any output, but the
    record is the exception's: it was read as `error exit 1`, no exception, its message
    `ValueError: bad`."""
    chain = parse_chain(record)
    if chain or TRACEBACK_HEADER in record:
        return chain
    blocks: list[list[str]] = [[]]
    for line in record.strip().splitlines():
        link = CHAIN_LINKS.get(line.strip())
        if link is not None:
            blocks[-1].append(link)  # the link of the block it ends, last
            blocks.append([])
        elif line.strip() or blocks[-1]:
            blocks[-1].append(line)
    found: list[PythonException] = []
    for n, block in enumerate(blocks):
        link = block.pop() if n + 1 < len(blocks) else None
        while block and not block[-1].strip():
            block.pop()
        match = EXCEPTION_LINE.match(block[0].rstrip()) if block else None
        if match is None:
            return ()  # no exception's line (a group's members, a dump): not read
        message = "\n".join([match["message"] or "", *block[1:]]).strip() or None
        found.append(PythonException(match["type"], message, link))
    return tuple(found)


# A compile error of the script Python was asked to run (`python bad.py`, `-c CODE`) has
# no frame to show, so CPython prints it with no `Traceback` header: its location, the
# source line and a caret, then `SyntaxError: ...`. Read only as what the script's
# compile printed, a `File` line that is not a traceback's frame (those follow a header).
_COMPILE_LOCATION = Lazy(r'^  File "[^"]*", line \d+\s*$')
_COMPILE_ERROR = Lazy(r"^(?:SyntaxError|IndentationError|TabError)(?::|$)")


def _compile_error(lines: list[str]) -> PythonException | None:
    """The last headerless compile error in `lines`: the script itself did not compile."""
    for index in range(len(lines) - 1, -1, -1):
        if not _COMPILE_LOCATION.match(lines[index]):
            continue
        if index > 0 and (lines[index - 1][:1].isspace() or _TB_HEADER.match(lines[index - 1])):
            continue  # a frame of a traceback (a module imported did not compile)
        end = index + 1
        while end < len(lines) and lines[end][:1].isspace():
            end += 1
        if end < len(lines) and _COMPILE_ERROR.match(lines[end]):
            match = EXCEPTION_LINE.match(lines[end].rstrip())
            if match is not None:
                return PythonException(match["type"], match["message"])
    return None


def _headerless_group(lines: list[str], after: int = -1) -> PythonException | None:
    """The last exception group printed with no traceback above it: under `sys.tracebacklimit
    = 0` (a CLI hiding its tracebacks) CPython prints a group's exception line `| `-prefixed
    (`  | ExceptionGroup: x (1 sub-exception)`), then its members under their rules, and no
    header: read as none, the error was `error exit 1` with the message
    `+------------------------------------`, the group's closing rule on stderr's last line.
    Read only where such a line is followed, past its message's lines, by its first
    member's rule (`+-+---------------- 1 ---...`), both at the outermost column (`  | `,
    `  +-+`), and is no line of an enclosing group or traceback: a nested group's line
    (`    | ExceptionGroup: h`, after its enclosing member's rule) was read as the group,
    the outer group and its other members lost. A group a thread died of (its line after
    `Exception in thread NAME:`, or inside that thread's group) ended no process. Only
    lines past `after` are read (the last uncaught traceback's header: one printed before
    it ended no process)."""
    for index in range(len(lines) - 1, after, -1):
        bar = _GROUP_BAR.match(lines[index])
        if (
            bar is None
            or len(bar["indent"]) != 2
            or bar["content"][:1].isspace()
            or not EXCEPTION_LINE.match(bar["content"])
        ):
            continue
        before = index - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        if before >= 0 and (
            _GROUP_BAR.match(lines[before])
            or ((rule := _GROUP_RULE.match(lines[before])) and rule["label"] is not None)
            or lines[before].startswith(THREAD_LABEL)
        ):
            # A frame's, a message's or a nested group's line (after a member's numbered
            # rule); a thread's group. Not after a closing rule: that is another group's
            # end (a group printed handled, or a thread's), and this one is the process's.
            continue
        after = index + 1
        # Its message's and notes' lines: `| `-prefixed, but 3.11's bare lines of a message
        # that runs over several (`  | ExceptionGroup: first` then `second (1
        # sub-exception)`: the group was read as none, `error exit 1`).
        while after < len(lines) and (
            _GROUP_BAR.match(lines[after])
            or (not _GROUP_RULE.match(lines[after]) and _continues_a_group(lines, after))
        ):
            after += 1
        rule = _GROUP_RULE.match(lines[after]) if after < len(lines) else None
        if rule is None or rule["label"] != "1" or rule["lead"] != "  +-+":
            continue
        return exception_after([_GROUP_HEADER, *lines[index:]], 0)
    return None


def thread_exceptions(text: str) -> tuple[PythonException, ...]:
    """The exception each thread died of (threading.excepthook's `Exception in thread
    NAME:` blocks, or a block whose first frame is threading's `_bootstrap_inner`), in the
    order printed: what the report says of the threads, never what ended the process. A
    block cut by another's interleaved lines is left out.

    Each is the last exception of its thread's chain, what the thread died of: a
    `raise shutil.Error("copy failed") from err` read its cause, the FileNotFoundError, and
    one whose cause was never raised (`from ValueError("root")`, no traceback of its own)
    read none."""
    if not text or TRACEBACK_HEADER not in text:
        return ()
    return tuple(
        went_on(chain.exceptions[-1])
        for chain in _chains(_lines(text))
        if chain.context == "thread"
    )


def raised_types(text: str) -> tuple[str, ...]:
    """The type of every exception `text` printed a traceback of before its first crash
    report, in any thread and in any chain, each once in the order first printed;
    shutdown noise ("Exception ignored in ...") left out. minimize asks it of each
    attempt: a candidate whose failure comes with an exception the original never
    printed (an evictor thread dead of AttributeError before the crash)
    fails for another reason, though with the same signature.

    What a crash leaves behind it is its consequence, not its cause, and varies with
    timing: after a DataLoader worker's faulthandler report the main process printed an
    EOFError in one run and a StopIteration in the next. So the text is read up to the
    first `Fatal Python error:` (faulthandler's report, any process's) or torch's
    `ERROR: Unexpected ... encountered in worker.`
    """
    if not text:
        return ()
    lines = _lines(text)
    found: dict[str, None] = {}
    for chain in _chains(lines[: _crash_report(lines)]):
        if chain.context != "ignored":
            found.update(dict.fromkeys(e.type for e in chain.exceptions))
    return tuple(found)


def crash_reported(text: str) -> bool:
    """Whether `text` holds a crash report (`raised_types` reads only what came before it)."""
    lines = _lines(text)
    return _crash_report(lines) < len(lines)


def _crash_report(lines: list[str]) -> int:
    """The index of the first crash report's line (faulthandler's, any process's, or torch's
    report of a worker's death); len(lines) where there is none."""
    return next(
        (i for i, line in enumerate(lines) if _FATAL.match(line) or _WORKER_DEATH.match(line)),
        len(lines),
    )


# torch's report of a DataLoader worker's death, printed by the main process.
_WORKER_DEATH = Lazy(r"^ERROR: Unexpected .* encountered in worker")


def last_printed(stderr: str) -> str | None:
    """`ZeroDivisionError: division by zero`, the last traceback `stderr` printed; None: none.
    (A pass's warning: the program printed its failure and exited 0.)"""
    plain = without_escapes(stderr) if "\x1b" in stderr else stderr
    if TRACEBACK_HEADER not in plain and RICH_TRACEBACK_TITLE not in plain:
        return None
    # The lines (rich's boxes undone) and their chains, read once for both readings.
    lines = _lines(stderr)
    chains = _chains(lines)
    chain = _uncaught(stderr, lines, chains)
    if not chain:
        return _last_other(lines, chains)
    last = went_on(chain[-1])
    return f"{last.type}: {last.message}" if last.message else last.type


def _last_other(lines: list[str], chains: list[_Chain]) -> str | None:
    """The last traceback that ended no process, said as whose it was: a thread's
    (`ValueError: bad (a thread's: it ended that thread, not the process)`) or one Python
    ignored (an atexit callback's `sys.exit(3)`: `SystemExit: 3 (Python ignored it: Exception
    ignored in atexit callback)`, a `__del__`'s: `Exception ignored in A.__del__`). A pass
    that printed one read as a bare pass. `lines`: the pass's stderr as `_lines` reads it,
    `chains` their `_chains`."""
    if not chains:
        return None
    chain = chains[-1]
    last = went_on(chain.exceptions[-1])
    said = f"{last.type}: {last.message}" if last.message else last.type
    if chain.context == "thread":
        return f"{said} (a thread's: it ended that thread, not the process)"
    if chain.context == "ignored":
        label = _ignored_label(lines[chain.start - 1]) if chain.start > 0 else ""
        if not label and "in _exitfunc" in "".join(lines[chain.start + 1 : chain.start + 2]):
            label = "a weakref.finalize callback at exit"
        return f"{said} (Python ignored it{': ' + label if label else ''})"
    return said


# What Python's "Exception ignored in: <...>" names: a function or method, or an object
# (`<finalize object at 0x..>`, `<_io.FileIO name='x' mode='wb' closefd=True>`).
_IGNORED_IN = Lazy(
    r"<(?:function|bound method|method) (?P<name>[\w.<>]+)"
    r"|<(?P<object>[\w.]+)(?: object\b| name=)"
)


def _ignored_label(line: str) -> str:
    """Whose exception Python ignored, from the line before its traceback: `Exception
    ignored in A.__del__` (of `Exception ignored in: <function A.__del__ at 0x7f..>`),
    Python 3.14's `Exception ignored while calling deallocator A.__del__` (of `Exception
    ignored while calling deallocator <function A.__del__ at 0x7f..>:`), `Exception ignored
    in atexit callback` (its callback unnamed); "" where the line is no such report (a
    weakref finalizer run at exit prints none) and `Exception ignored` where it names no
    function or object. Never an address: it differs in each attempt."""
    text = line.strip()
    if not text.startswith(IGNORED_LABELS):
        return ""
    # 3.13: `<head>: <object>`; 3.14: `<head> <object>:`, or `<head>:` where none is named.
    head = text.partition(": ")[0].partition(" <")[0].rstrip(":").rstrip()
    if not head.startswith(_IGNORED) or "atexit" in head:
        return head
    found = _IGNORED_IN.search(text, len(head))
    if found is None:
        return _IGNORED if head == f"{_IGNORED} in" else head
    if found["name"]:
        return f"{head} {found['name']}"
    return f"{head} a {found['object']} object"


class _Chain(NamedTuple):
    """One chain of tracebacks (`During handling of the above exception ...` joins its
    blocks): whose it is (its first block's `_traceback_context`), that block's header
    line, its exceptions, primary first, and its last block's header line."""

    context: str
    start: int
    exceptions: list[PythonException]
    last: int


def _lines(text: str) -> list[str]:
    """The text's lines, terminal escapes taken out (rich under FORCE_COLOR, 3.13's coloured
    tracebacks: `\x1b[1;91mRuntimeError: \x1b[0mwrapped` is no exception line) and a rich
    traceback's boxes undone. Each is done only where the text has what it undoes."""
    if "\x1b" in text:
        text = without_escapes(text)
    lines = text.splitlines()
    return unboxed(lines) if any(corner in text for corner in RICH_BOX_CORNERS) else lines


def _chains(lines: list[str]) -> list[_Chain]:
    """Every chain of tracebacks in `lines`, in the order printed. An exception of a chain
    that was never raised (`raise ExceptionGroup(...) from ValueError("root")`: the cause
    was only made) prints no traceback, only its own lines above the link (`_unraised`):
    it keeps its place in the chain, as a raised one does."""
    chains: list[_Chain] = []
    quotes = quote_lines(lines)
    for index, line in enumerate(lines):
        if not _TB_HEADER.match(line):
            continue
        exception = exception_after(lines, index, quotes=quotes)
        if exception is None:
            continue
        link = _link_before(lines, index)
        unraised: list[PythonException] = []
        first = index
        if link is not None:
            # After a logged traceback (`_logged_end`), read from its exception's own
            # lines on: what follows them is no part of its chain.
            logged = _logged_end(lines, chains[-1]) if chains else None
            if logged is not None and _in_its_literal(lines, chains[-1], logged, index):
                logged = None  # its message's own lines, as its raise's source shows them
            floor = chains[-1].last if chains else -1
            unraised, first, link = (
                _unraised(lines, index, floor)
                if logged is None
                else _unraised(lines, index, logged, logged=True)
            )
            if logged is not None and link is not None and not _right_after(lines, logged, first):
                link = None  # other lines stand between: the chain's cause was missed
        if link is not None and chains:
            chain = chains[-1].exceptions
            chain[-1] = replace(chain[-1], link=link)
            chain += [*unraised, exception]
            chains[-1] = chains[-1]._replace(last=index)
        else:
            # A new chain: it is what its first block is (uncaught, a thread's, ignored);
            # led by an unraised exception, what the line above that one says too.
            context = _traceback_context(lines, index)
            if unraised and context == "uncaught":
                context = _traceback_context(lines, first)
            chains.append(_Chain(context, first, [*unraised, exception], index))
    return chains


def _unraised(
    lines: list[str], header: int, floor: int, *, logged: bool = False
) -> tuple[list[PythonException], int, str | None]:
    """The exceptions of a chain printed with no traceback (never raised) just above the
    traceback at `header`, which a link line follows: CPython prints each as its exception
    line and message alone (`ValueError: root`), a group as its `| ` lines; primary first,
    each with the link below it. Also the line the first of them begins at (`header` where
    there are none), and the link above that line (`_link_before`'s reading of it): the
    chain goes on above it, a traceback's block; None where none stands there.

    Read back from the link line, one exception at a time (`_unraised_above`), below
    `floor` (the header of the last block read already; a logged traceback's last line of
    its own, `_logged_end`)."""
    found: list[PythonException] = []
    first = header
    at = _link_index(lines, header)
    while at is not None and (read := _unraised_above(lines, at, floor, logged=logged)):
        exception, first = read
        found.insert(0, replace(exception, link=_link_of(lines[at])))
        at = _link_index(lines, first)
    return found, first, None if at is None else _link_of(lines[at])


# The line a logging call prints above the traceback of an exception the program handled
# (`logging.exception(...)`, `log.error(..., exc_info=True)`): its record, which names its
# level in every common format (`ERROR:root:lookup failed`, `2026-12-07 10:15:02 ERROR
# lookup failed`, loguru's `| ERROR    |`). A traceback under one is printed in full by the
# logger, so its chain ends there: the process went on from it.
_LOG_RECORD = Lazy(r"\b(?:ERROR|CRITICAL|FATAL|EXCEPTION)\b")


def _logged_end(lines: list[str], chain: _Chain) -> int | None:
    """The last line of the own lines of `chain`'s last exception (its first message line
    and the indented ones under it, as `went_on` keeps them) where a log record stands
    right above the chain, a logged traceback; None otherwise, and for a group's (its lines
    end at its closing rule, which `_unraised_above` bounds already).

    Read as the last block's message, the lines after a logged exception ran on to the
    next chain's cause never raised: `logging.exception(...)` of a KeyError then `raise
    RuntimeError("top") from ValueError("root")` under `python -S` read the chain
    `[KeyError("'x'\nValueError: root"), RuntimeError]`, the ValueError lost. (A chain
    printed right under an error's record, `log.error(...)` then `raise X from e`, whose
    raised cause's message runs over a line at the margin, `ValueError("bad\nmore")`, reads
    the same as a logged ValueError then output: its cause is missed, not made up.)"""
    if chain.start < 1 or not _LOG_RECORD.search(lines[chain.start - 1]):
        return None
    if "Exception Group" in lines[chain.last]:
        return None
    index = chain.last + 1
    while index < len(lines) and (lines[index][:1].isspace() or not lines[index]):
        index += 1  # its frames, as exception_after skips them
    if index >= len(lines):
        return None
    while index + 1 < len(lines) and lines[index + 1][:1].isspace():
        index += 1
    return index


def _in_its_literal(lines: list[str], chain: _Chain, end: int, header: int) -> bool:
    """Whether the logged exception's message, its own lines (ending at `end`) and the lines
    at the margin between them and the link above the traceback at `header`, is the message
    literal its raise shows whole (`raise ValueError("bad\\nOSError: disk full")` on the
    source line under its last frame: each line in order, joined by `\\n`, the last ending at
    the closing quote or at a `\\n` before it), and that raise below makes no cause in place:
    then those lines are that exception's message, and the traceback no logged one but the
    chain's own block (`log.error("failed")`, then `raise X from e` of that ValueError, read
    the cause `OSError('disk full')`, made up, under `python -S`).

    The literal is matched whole, not line by line: a logged `ValueError("bad\\nOSError:
    disk full on /data")`, then `from err` of an `OSError("disk full")` never raised, has a
    line between, `OSError: disk full`, that is a piece of one of the literal's lines, and
    the logged ValueError was read as the cause. A message the literal does not spell as
    printed (an f-string, an escaped quote) is read as a logged one's, as before."""
    at = _link_index(lines, header)
    if at is None or _made_in_the_raise(lines, at) is not None:
        return False
    between = [line.rstrip() for line in lines[end + 1 : at]]
    while between and not between[-1]:
        between.pop()  # the blank line CPython prints above the link
    if not between:
        return False
    index, last_frame = chain.last + 1, None
    while index < len(lines) and (lines[index][:1].isspace() or not lines[index]):
        if STACK_FRAME.match(lines[index]):
            last_frame = index
        index += 1
    if last_frame is None or index > end or ": " not in lines[index]:
        return False
    first = lines[index].split(": ", 1)[1]
    message = "\\n".join([first, *(line.rstrip() for line in lines[index + 1 : end + 1]), *between])
    source = " ".join(lines[last_frame + 1 : index])
    return any(
        f"{quote}{message}{tail}{quote}" in source for quote in "\"'" for tail in ("", "\\n")
    )


def _right_after(lines: list[str], end: int, first: int) -> bool:
    """Whether the link line above `lines[first]` stands right after `lines[end]`, with
    only blank lines between: the chain of the exception ending there goes on."""
    at = _link_index(lines, first)
    return at is not None and all(not line.strip() for line in lines[end + 1 : at])


# A type that names itself an exception class (`ValueError`, `torch.OutOfMemoryError`,
# `KeyboardInterrupt`, `Exception`, `StopIteration`, `BaseExceptionGroup`): what a line of a
# message or of the program's output seldom is (`Hint: see the docs`, `INFO: loading`), though
# each matches EXCEPTION_LINE. A module's own `Error` is one where it is dotted
# (`shutil.Error`, `_csv.Error`, `configparser.Error`): a line of output seldom names one so;
# a bare `Error` is not (`Error: 2 workers failed`, a program's own message). It misses classes
# named otherwise (subprocess.TimeoutExpired, concurrent.futures' BrokenProcessPool, a bare
# `Warning`), which a reader of it must do without; a group only as `ExceptionGroup`,
# `...ExceptionGroup` or `...ErrorGroup`, not any `...Group`, which output names too
# (`ProcessGroup: init`).
_CLASS_LIKE = Lazy(
    r"(?:^|\.)(?:Exception|ExceptionGroup"
    r"|[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Iteration|ExceptionGroup|ErrorGroup))$"
    r"|\w\.Error$"
)


def named_as_a_class(type_name: str) -> bool:
    """Whether `type_name` (an exception line's type, dotted or not) names itself an
    exception class: the one rule of it, for a cause never raised and a thread's line."""
    return _CLASS_LIKE.search(type_name) is not None


def _unraised_above(
    lines: list[str], link: int, floor: int, *, logged: bool = False
) -> tuple[PythonException, int] | None:
    """The exception never raised that CPython printed just above the link line at
    `link`, and the line it begins at; None where the lines there are no such exception's,
    or may be another's: a cause missed is better than a cause made up.

    Where the raise below the link makes its cause in place (`raise RuntimeError("top")
    from Timeout("slow\\nafter 3 tries")`, its source line printed in the traceback below:
    `_made_in_the_raise`), that cause is one never raised, whatever stands above it, and
    its class is named: the one line of that class (`_made_above`) begins it, even one not
    named as a class whose message runs over lines, whose first line reads as any output's
    would (`Note: retrying` above an unraised `Timeout("a\\nb")` is no exception `Note`;
    `Timeout: a` is, by the raise's words), and even right under a traceback the program
    went on from (`logging.exception(...)`, then that raise).

    Else its message is every line from its exception line down to the link, blank ones
    too (`ValueError("root\\n\\nHint: check it")`), and any of them may look like an
    exception line (`Hint: check it`, `OSError: disk full`). So the lines above the link
    are read back to what bounds them, and what that is says where the exception begins:
    - a link line: the chain goes on above it, and the exception is the first line below
      it, as CPython prints it;
    - a traceback (its header or a frame): every line down to the link is its message, as
      CPython prints a raised cause's (`ValueError("bad\\n\\nreason:\\nOSError: disk full")`
      read OSError), so there is none; a traceback the program went on from then a cause
      never raised reads the same and is left to that traceback, unless a line that ends a
      message (a log record, a warning: `_MESSAGE_END`) stands between them, or a log
      record stands above it (`logged`: `floor` is then its exception's last own line);
    - the program's other output (or none): the one line of a type named as a class within
      a message's length of the link (`loading model` printed right above the cause with no
      blank line); none where two are (`print("ConfigError: was retried")` above an unraised
      ValueError reads as `ConfigError("was retried\\n...\\nValueError: root")`); else the
      one line there, of any type (`Timeout: took too long`), where nothing else is
      (`loading` then `Timeout: took too long` is no exception `loading`), but for a line
      right under a logged exception's own, which may be more of its message.
    """
    end = link - 1
    while end > floor and not lines[end].strip():
        end -= 1
    if end <= floor:
        return None
    made = _made_in_the_raise(lines, link)
    if made is not None and (read := _made_above(lines, floor, end, made)) is not None:
        return read
    top = end
    while top - 1 > floor and not _bounds_unraised(lines[top - 1]):
        top -= 1
    first = next(index for index in range(top, end + 1) if lines[index].strip())
    bound = lines[top - 1] if top > 0 else ""
    if top > 0 and _link_of(bound) is not None:
        return _unraised_at(lines, first, end, any_type=True)
    # (`floor` is a header, which bounds as one, or a logged exception's last line, from
    # which the program's other output goes on.)
    if top > 0 and (TRACEBACK_HEADER in bound or STACK_FRAME.match(bound)):
        return None
    nearest = max(first, end - _MAX_MESSAGE_LINES + 1)
    found = [read for index in range(nearest, end + 1) if (read := _unraised_at(lines, index, end))]
    if found:
        return found[0] if len(found) == 1 else None
    if logged and top - 1 == floor:
        return None
    return _unraised_at(lines, first, end, any_type=True) if first == end else None


def _made_above(
    lines: list[str], floor: int, end: int, made: str
) -> tuple[PythonException, int] | None:
    """The cause never raised of class `made` whose message runs down to `lines[end]`: the
    one line of that class (`Timeout: slow`, `errors.Timeout: slow`) within a message's
    length above it, below `floor` and below the exception line of the traceback at `floor`
    (a logged `Timeout`'s own line is not the cause's), a link line and a line that ends a
    message; None where there is none, or two (`print("Timeout: was retried")` above it)."""
    own = None
    if floor >= 0 and TRACEBACK_HEADER in lines[floor]:
        own = next((i for i in range(floor + 1, end + 1) if lines[i][:1].strip()), None)
    typed: list[int] = []
    for index in range(end, max(floor, end - _MAX_MESSAGE_LINES), -1):
        line = lines[index]
        if index == own or _link_of(line) is not None or _MESSAGE_END.match(line):
            break
        match = EXCEPTION_LINE.match(line.rstrip())
        if match is not None and match["type"].rpartition(".")[2] == made:
            typed.append(index)
    return _unraised_at(lines, typed[0], end, any_type=True) if len(typed) == 1 else None


# A raise that makes its cause in place, as its source line shows it: `raise
# RuntimeError("top") from Timeout("slow")` (`from errors.Timeout(`), the class's name.
_FROM_MADE = Lazy(r"\bfrom\s+(?:[A-Za-z_]\w*\.)*(?P<name>[A-Za-z_]\w*)\s*\(")


def _made_in_the_raise(lines: list[str], link: int) -> str | None:
    """The class whose instance the raise of the traceback just below the link line at
    `link` makes its cause in place (`from Timeout(...)` on the source lines under its last
    frame); None where there is no such traceback or its raise names no class so (`from
    err`: made elsewhere). CPython prints that cause as `Timeout: ...` (`errors.Timeout`
    from another module): the class is the one the raise named, not a guess."""
    index = link + 1
    while index < len(lines) and not lines[index].strip():
        index += 1
    if (
        index >= len(lines)
        or not _TB_HEADER.match(lines[index])
        or "Exception Group" in lines[index]
    ):
        return None
    last_frame = None
    index += 1
    while index < len(lines) and (lines[index][:1].isspace() or not lines[index]):
        if STACK_FRAME.match(lines[index]):
            last_frame = index
        index += 1
    if last_frame is None:
        return None
    source = " ".join(lines[last_frame + 1 : index])
    made = _FROM_MADE.search(source)
    return made["name"] if made is not None else None


def _bounds_unraised(line: str) -> bool:
    """Whether `line` stands above an exception never raised, never in it: a link line, a
    report's label or another line that ends a message, a traceback's header or frame."""
    return bool(
        _MESSAGE_END.match(line)
        or _link_of(line) is not None
        or TRACEBACK_HEADER in line
        or STACK_FRAME.match(line)
    )


def _unraised_at(
    lines: list[str], index: int, end: int, *, any_type: bool = False
) -> tuple[PythonException, int] | None:
    """The exception never raised whose line is `lines[index]` and whose message runs down
    to `lines[end]`: `ValueError: root` and every line below it, or a group's `| ` lines and
    its members; None where that line is neither, or (unless `any_type`) its type is not
    named as a class."""
    line = lines[index].rstrip()
    bar = _GROUP_BAR.match(line)
    if bar is not None and len(bar["indent"]) == 2 and not bar["content"][:1].isspace():
        match = EXCEPTION_LINE.match(bar["content"])
        read = exception_after([_GROUP_HEADER, *lines[index : end + 1]], 0) if match else None
    elif line[:1].isspace():
        return None  # a frame's or a message's line, not an exception's
    else:
        match = EXCEPTION_LINE.match(line)
        message = "\n".join([match["message"] or "", *lines[index + 1 : end + 1]]) if match else ""
        read = PythonException(match["type"], message.strip() or None) if match else None
    if match is None or read is None or not (any_type or named_as_a_class(match["type"])):
        return None
    return read, index


def went_on(exception: PythonException) -> PythonException:
    """A traceback the process went on from, its message cut to the exception's own lines.

    CPython prints an uncaught exception last, so what follows its first line is more of
    its message (a CUDA error's advice on CUDA_LAUNCH_BLOCKING). A traceback the process
    went on from (logged by `logging.exception`, a child's) is followed by the program's
    later output instead: `KeyError: 'missing'` then `checkpoint dir not writable` are
    two things. Indented lines (torch's `\tMissing key(s) in state_dict`, pydantic's
    fields) are still the message's.
    """
    if exception.message is None:
        return exception
    first, *rest = exception.message.split("\n")
    kept = [first]
    for line in rest:
        if not line[:1].isspace():
            break
        kept.append(line)
    return replace(exception, message="\n".join(kept).strip() or None)


def fatal_errors(text: str) -> list[FatalError]:
    """Every faulthandler report in `text`, in order, each with the stacks printed under it."""
    lines = text.splitlines()
    found: list[FatalError] = []
    index = 0
    while index < len(lines):
        match = _FATAL.match(lines[index])
        if match is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and FATAL_BODY.match(lines[end]) and not _FATAL.match(lines[end]):
            end += 1
        stack = "\n".join(lines[index:end]).rstrip()
        found.append(FatalError(match["description"], stack))
        index = end
    return found


_THREAD_HEADER = Lazy(r"^(?:Current thread|Thread) 0x[0-9a-fA-F]+ ")


def current_thread_first(stack: str) -> str:
    """A faulthandler report with the crashing (`Current thread`) block first.

    faulthandler prints the threads in the interpreter's order, the crashing one
    anywhere among them; a reader wants it right under the header.
    """
    lines = stack.split("\n")
    starts = [i for i, line in enumerate(lines) if _THREAD_HEADER.match(line)]
    if not starts:
        return stack
    head = lines[: starts[0]]
    blocks: list[list[str]] = []
    tail: list[str] = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        block = lines[start:end]
        if n + 1 == len(starts):
            # What follows the last thread's frames: `Extension modules: ...` and the like.
            body = len(block)
            while body > 1 and not block[body - 1].startswith("  "):
                body -= 1
            block, tail = block[:body], block[body:]
        while block and not block[-1].strip():
            block.pop()
        blocks.append(block)
    blocks.sort(key=lambda block: not block[0].startswith("Current thread"))
    out = list(head)
    for block in blocks:
        out += [*block, ""]
    out += [line for line in tail if line.strip()]
    return "\n".join(out).rstrip()


def _link_before(lines: list[str], header: int) -> str | None:
    """How the traceback at `header` continues a chain ("context", "cause"); None: it starts one."""
    index = _link_index(lines, header)
    return None if index is None else _link_of(lines[index])


def _link_index(lines: list[str], header: int) -> int | None:
    """The line of the link (`The above exception was the direct cause ...`) above the
    block that begins at `header`, past blank lines; None where another line stands there."""
    index = header - 1
    while index >= 0 and not _GROUP_PREFIX.sub("", lines[index]).strip():
        index -= 1
    if index < 0 or _link_of(lines[index]) is None:
        return None
    return index


def _link_of(line: str) -> str | None:
    """What a link line says of the block below it ("context", "cause"), a group's `| `
    prefix aside; None where `line` is no link line."""
    return CHAIN_LINKS.get(_GROUP_PREFIX.sub("", line).strip())


def quote_lines(lines: list[str]) -> list[int]:
    """Where `lines` has a line of three quotes (`_QUOTES`), in order: read once for a whole
    log, so that each of its tracebacks asks `_quoted` by a bisect. Asked per traceback, the
    way back to the nearest such line (up to `_MAX_QUOTED_LINES` of them) was read again
    for each header: 20,000 chained tracebacks took 15 s of CPU, nearly all of it there."""
    return [index for index, line in enumerate(lines) if '"""' in line and _QUOTES.match(line)]


def _quoted(lines: list[str], header: int, quotes: list[int] | None = None) -> bool:
    """Whether the traceback at `header` is inside a worker's traceback its pool quoted
    (`_REMOTE_TRACEBACK`): the nearest line of three quotes before it, within
    `_MAX_QUOTED_LINES` (and not the first line, which has none above it), opens the quote.
    `quotes`: `quote_lines(lines)`, where the caller read it already; else the lines before
    `header` are read here, as far as that bound."""
    floor = max(header - _MAX_QUOTED_LINES, 0)
    if quotes is None:
        quotes = quote_lines(lines[floor + 1 : header])
        nearest = floor + 1 + quotes[-1] if quotes else None
    else:
        at = bisect_left(quotes, header)
        nearest = quotes[at - 1] if at > 0 and quotes[at - 1] > floor else None
    return nearest is not None and _REMOTE_TRACEBACK.match(lines[nearest - 1]) is not None


def exception_after(
    lines: list[str], header: int, *, quotes: list[int] | None = None
) -> PythonException | None:
    """The exception the traceback whose header is `lines[header]` ended in (its type,
    message and a group's members), read past its frames; None where another line comes
    first (interleaved output). capture's footprint asks it of each traceback it picks
    from. `quotes`: `quote_lines(lines)`, where the caller asks it of many headers of one
    log (each then costs its own lines alone, not the way back to a quote)."""
    group = "Exception Group" in lines[header]
    quoted = _quoted(lines, header, quotes)
    index = header + 1
    while index < len(lines):
        line = _GROUP_PREFIX.sub("", lines[index]) if group else lines[index]
        # A frame's lines are indented; a blank one stands among them where CPython printed
        # a frame's source line empty (a SIGCHLD handler that ran on a `def` line), and
        # ended the traceback there: the RuntimeError after it was lost (`error exit 1`).
        if line[:1].isspace() or not line:
            index += 1
            continue
        match = EXCEPTION_LINE.match(line.rstrip())
        if match is None:
            return None  # interleaved output: not a traceback we can trust
        message_lines = [match["message"]] if match["message"] is not None else []
        reraised = bool(message_lines) and _RERAISED.match(message_lines[0]) is not None
        most = _MAX_RERAISED_LINES if reraised else _MAX_MESSAGE_LINES
        for at, extra in enumerate(lines[index + 1 : index + most], index + 1):
            if group:
                # Inside a group a message's first line is prefixed, 3.11 prints the rest
                # bare (`  | ExceptionGroup: first` then `second (1 sub-exception)`: the
                # message was `first`); "+-+----" starts a member.
                if _GROUP_PREFIX.match(extra):
                    extra = _GROUP_PREFIX.sub("", extra)
                elif _GROUP_RULE.match(extra) or not _continues_a_group(lines, at):
                    break
            if not extra.strip() or _TB_HEADER.match(extra) or _MESSAGE_END.match(extra):
                break
            if quoted and _QUOTES.match(extra):
                break
            if not message_lines:
                break  # `KeyboardInterrupt` alone: what follows is other output
            message_lines.append(extra)
        message = "\n".join(message_lines).strip() or None
        members = _group_members(lines, index + 1) if group else ()
        return PythonException(match["type"], message, members=members)
    return None


# An exception group's lines (3.11+): each line of the group `| `-prefixed at its depth's
# column (two more for each nested group), each member opened by a rule with its number
# (`+-+---------------- 1 ----------------`, the next ones `+---------------- 2 ---...`),
# the last closed by a bare rule; past `sys.excepthook`'s width a `... ` rule opens the
# line `and 5 more exceptions`. 3.11 prints a member's message lines after its first
# unprefixed (`ValueError: a` then `second line` at column 0).
_GROUP_BAR = Lazy(r"^(?P<indent> *)\| ?(?P<content>.*)$")
_GROUP_RULE = Lazy(r"^(?P<lead> *\+(?:-\+)?)-+(?: (?P<label>\d+|\.\.\.) -+)?\s*$")
_MAX_GROUP_LINES = 5000

# One line of a group: ("bar", its column, its content) or ("rule", its member's column,
# the member's number, "..." or None where it closes the last member).
_GroupLine = tuple[str, int, "str | None"]


def _group_members(lines: list[str], start: int) -> tuple[PythonException, ...]:
    """The members of the exception group whose exception line is just before `start`,
    read from the rules and `| ` lines that follow it; () where none follow. Its own
    message's and notes' lines (`e.add_note(...)`: `  | note`) come before its first
    member's rule, at its own column: they were read as the first line, no rule, and the
    members lost."""
    own = _GROUP_BAR.match(lines[start - 1]) if start > 0 else None
    own_column = len(own["indent"]) if own is not None else None
    found: list[_GroupLine] = []
    column: int | None = None  # its first rule's: its members'
    for index in range(start, min(len(lines), start + _MAX_GROUP_LINES)):
        line = lines[index]
        if (rule := _GROUP_RULE.match(line)) is not None:
            at = len(rule["lead"]) - 1
            column = at if column is None else column
            found.append(("rule", at, rule["label"]))
            if rule["label"] is None and at == column:
                break  # its last member's closing rule: what follows is another's
        elif (bar := _GROUP_BAR.match(line)) is not None:
            if column is None:
                if len(bar["indent"]) != own_column:
                    break
                continue  # its own message's or a note's line
            found.append(("bar", len(bar["indent"]), bar["content"]))
        elif _continues_a_group(lines, index + 1) and (column is None or found[-1][0] == "bar"):
            # 3.11's unprefixed message line: of its own message (before its first rule) or
            # of a member's.
            if column is not None:
                found.append(("bar", found[-1][1], line))
        else:
            break
    if column is None:
        return ()
    return _members_at(found, column)


def group_printed_last(text: str) -> str | None:
    """The exception line of the group whose traceback the main thread printed last, where
    `text` ends in that group's closing rule (`ExceptionGroup: two failed (2
    sub-exceptions)`, its message's first line and the indented ones under it, as
    `went_on` keeps them); None where it ends otherwise, or in another's rule (a thread's
    group, one Python ignored, a member's).

    A process that printed a group it handled (`traceback.print_exc()`,
    `logging.exception`) and exited its own way (`sys.exit(2)`) takes its message from
    stderr's last line, as one that printed any other exception does (`KeyError: 'x'`):
    that line is the group's closing rule, `+------------------------------------`, which
    says nothing; the group's own line is what it printed of its failure."""
    lines = _lines(text)
    end = len(lines) - 1
    while end >= 0 and not lines[end].strip():
        end -= 1
    rule = _GROUP_RULE.match(lines[end]) if end >= 0 else None
    # The outermost group's members' rules stand at column 4 (`    +---`), under its
    # header at column 2 (`  + Exception Group Traceback`).
    if rule is None or rule["label"] is not None or rule["lead"] != "    +":
        return None
    chains = _chains(lines)
    if (
        not chains
        or chains[-1].context != "uncaught"
        or not is_group_header(lines[chains[-1].last])
    ):
        return None
    group = went_on(chains[-1].exceptions[-1])
    return f"{group.type}: {group.message}" if group.message else group.type


def closes_a_group(line: str) -> bool:
    """Whether `line` is an exception group's closing rule (`+------------------------`):
    stderr's last line, and so an error's message, where a group's traceback was printed
    last."""
    rule = _GROUP_RULE.match(line)
    return rule is not None and rule["label"] is None


def _continues_a_group(lines: list[str], index: int) -> bool:
    """Whether the line at `index` is still the group's: a rule or a `| ` line, or one of
    3.11's bare lines of a message (a group's own or a member's) that runs on to one within
    a message's length. Not only the next line: a message of three lines (`g1\ng2\ng3`)
    has two bare lines, and at the first the group was read as ended, its members lost."""
    for line in lines[index : index + _MAX_MESSAGE_LINES]:
        if _GROUP_RULE.match(line) or _GROUP_BAR.match(line):
            return True
        if _TB_HEADER.match(line) or _MESSAGE_END.match(line):
            return False
    return False


def _members_at(found: list[_GroupLine], column: int) -> tuple[PythonException, ...]:
    """The leaf members of a group whose members' lines stand at `column` in `found`."""
    members: list[PythonException] = []
    index = 0
    while index < len(found):
        kind, at, label = found[index]
        if kind != "rule" or at != column or label is None:
            index += 1
            continue
        end = index + 1
        while end < len(found) and not (found[end][0] == "rule" and found[end][1] == column):
            end += 1
        if label != "...":  # `and 5 more exceptions`: their types are not printed
            members += _leaves(found[index + 1 : end], column)
        index = end
    return tuple(members)


def _leaves(body: list[_GroupLine], column: int) -> tuple[PythonException, ...]:
    """A member's exception (the last of its chain, as a traceback prints it), or a nested
    group's leaf members where it is one; () where it shows none (`... (max_group_depth is
    10)`). A member never raised prints its exception line alone, with no traceback above
    it (a group built of groups: only the outermost was raised)."""
    own = [
        (n, text or "") for n, (kind, at, text) in enumerate(body) if kind == "bar" and at == column
    ]
    texts = [_PLAIN_HEADER if _TB_HEADER.match(text) else text for _, text in own]
    headers = [i for i, text in enumerate(texts) if text == _PLAIN_HEADER]
    last = headers[-1] if headers else None
    exception = exception_after(texts if last is not None else [_PLAIN_HEADER, *texts], last or 0)
    if exception is None:
        return ()
    # A nested group's own members: the deeper lines after the header of its traceback.
    nested = _members_at(body[own[last][0] if last is not None else 0 :], column + 2)
    return nested or (exception,)


_PLAIN_HEADER = "Traceback (most recent call last):"


def _traceback_context(lines: list[str], header: int) -> str:
    previous = lines[header - 1] if header > 0 else ""
    first_frame = lines[header + 1] if header + 1 < len(lines) else ""
    # Reports printed while the interpreter shuts down come after the real one:
    # "Exception ignored in ...", atexit errors, and weakref finalizers (which
    # print through sys.excepthook with no header at all).
    if previous.startswith(IGNORED_LABELS) or "in _exitfunc" in first_frame:
        return "ignored"
    # A thread's traceback begins in threading's `_bootstrap_inner`, where its header line
    # may stand lines away from it: the threads' reports interleave on a shared stderr.
    if previous.startswith(THREAD_LABEL) or _THREAD_BOOTSTRAP.search(first_frame):
        return "thread"
    return "uncaught"


def headline(message: str) -> str:
    """What a message says, in one line: its first, but for an exception torch raised
    again from a DataLoader worker (`Caught RuntimeError in DataLoader worker process 0.`,
    true of any RuntimeError in any worker), the worker's own message, its traceback's last
    line (`stack expects each tensor to be equal size, ...`): what a spec expects, a title
    says."""
    lines = message.strip().split("\n")
    first = lines[0].strip()
    caught = _RERAISED.match(first)
    if caught is None:
        return first
    short = bare_type(caught["type"])
    for line in reversed(lines[1:]):
        found = EXCEPTION_LINE.match(line.rstrip())
        if found and bare_type(found["type"]) == short and found["message"]:
            return found["message"].strip()
    return first


# A frame's location, `File "x.py", line 3`, as CPython writes it (then `, in f`).
FRAME_AT = r'File "(?P<file>[^"]+)", line \d+'
# A frame line of a stack, as a traceback (`File "x.py", line 3, in f`) or a faulthandler
# dump (`File "x.py", line 3 in f`) writes it: the one definition, capture's ticket's too.
STACK_FRAME = Lazy(rf"^\s*{FRAME_AT},? in (?P<function>\S+)")


# A compiler sanitizer's report (ASan, UBSan with halt_on_error, TSan, MSan) names its
# finding on a `SUMMARY: AddressSanitizer: heap-buffer-overflow /w/heap.c:3 in overflow` line,
# then prints its shadow memory and `==PID==ABORTING` last and exits 1 (or aborts, under
# abort_on_error): the one spelling of that line, which cxxterminate.py reads too.
SANITIZER_ABORT = Lazy(r"^==\d+==ABORTING\s*$", re.M)
_SANITIZER_SUMMARY = Lazy(r"^SUMMARY: (?P<finding>\w+Sanitizer: .*?)\s*$", re.M)
# A place in a finding: the source as compiled, with its line (`/w/heap.c:3`, `heap.c:3:7`),
# or, with no symbolizer, the module and its offset (`(/w/libheap.so+0x11d9)`); or a path.
_SANITIZER_PLACE = Lazy(
    r"(?<!\S)\(?(?:[^\s()]*/)?(?P<name>[^\s/()]+?)(?::\d+(?::\d+)?|\+0x[0-9a-fA-F]+)\)?(?!\S)"
    r"|(?<!\S)\(?[^\s()]*/(?P<base>[^\s/()]+)\)?(?!\S)"
)


def sanitizer_finding(summary: str) -> str:
    """A sanitizer's finding reduced to its kind and function, each place in it to its
    file's name: `AddressSanitizer: heap-buffer-overflow heap.c in overflow` for
    `... /w/heap.c:3 in overflow`, `... libheap.so` for `... (/w/libheap.so+0x11d9)`. The
    path is where it was built (a copy of the project, a rebuild elsewhere misses it), and
    the line and offset move whenever the code shrinks (minimize)."""
    return _SANITIZER_PLACE.sub(lambda m: m["name"] or m["base"], summary)


def sanitizer_report(text: str) -> str | None:
    """The finding (`sanitizer_finding`'s) of the last compiler sanitizer's report in
    `text` that ended its program: the last `SUMMARY:` line before a `==PID==ABORTING`;
    None without one. A ticket's paste, whose prose may follow the report, where
    `last_line` reads a program's output, which ends in it."""
    aborts = [m.start() for m in SANITIZER_ABORT.compiled.finditer(text)]
    if not aborts:
        return None
    found = [m["finding"] for m in _SANITIZER_SUMMARY.compiled.finditer(text, 0, aborts[-1])]
    return sanitizer_finding(found[-1]) if found else None


def last_line(text: str) -> str | None:
    r"""The last non-blank line of `text`, stripped (`sys.exit("msg")` prints only that).

    None where it is a stack's: a frame line or the source line under one (a dump printed
    last, `faulthandler.dump_traceback()` or `traceback.print_stack()`, then `sys.exit(3)`).
    It says where the program was, not what failed: capture wrote
    `message: File "/tmp/w/job\.py", line \d+ in <module>` as the error's message, which a
    verify in a copy of the spec, at another path, missed, and blamed on a file it lacked.

    Where a compiler sanitizer ended the program (`==4242==ABORTING`: a pid, different in
    each run, and no more), its summary's finding (`sanitizer_finding`): `AddressSanitizer:
    heap-buffer-overflow heap.c in overflow`; None where it printed none."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1]
    if SANITIZER_ABORT.match(last):
        return sanitizer_report(text)
    if STACK_FRAME.match(last):
        return None
    if len(lines) > 1 and last[:1].isspace() and STACK_FRAME.match(lines[-2]):
        return None
    return last.strip()
