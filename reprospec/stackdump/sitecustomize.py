"""reprospec stack dumps: SIGURG -> all threads' stacks in $REPROSPEC_STACK_DIR/stack-<pid>.txt,
and a fatal signal -> the Python stack of the thread that took it, on stderr; a normal exit
-> $REPROSPEC_STACK_DIR/ended-<pid>.txt (`_record_end`), and an uncaught exception of the
main thread -> $REPROSPEC_STACK_DIR/raised-<pid>.txt (`_record_raised`).

Put on a child's PYTHONPATH by the runner, so every Python process of an
attempt (forked workers and spawned interpreters too) can tell where it hangs
when the engine asks, just before a timed-out attempt is killed, and where it
crashed. Standard library only; never raises; chains to the sitecustomize it
shadows.
"""

from __future__ import annotations

import _signal as _signal_numbers  # built in, imported at every interpreter's start
import os
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType, TracebackType

_state = {"fd": -1}
# The lines around an asyncio process's task dump, process/stacks.py's TASKS_FOLLOW and
# TASKS_END (this module imports nothing of reprospec): the first begins the file of a
# process whose SIGURG runs `_dump_tasks`, the second ends each of its dumps, so the engine
# waits for the tasks, written after faulthandler's threads, where it read the file as done.
_TASKS_FOLLOW = b"# tasks follow each dump\n"
_TASKS_END = b"# tasks end\n"


def _register() -> None:
    """(Re)register the stack dump on SIGURG into a file named for the current pid.

    SIGURG (core/signals.py's STACK_DUMP_SIGNAL, named here: this module imports nothing of
    reprospec) is ignored by default, so taking it over changes nothing a program sees
    (but `signal.getsignal`, once asyncio is imported: `_watch_tasks`); SIGUSR1 kept alive
    a program that died of it outside reprospec.
    """
    # Built into the interpreter (as _signal, imported at the top): `signal` would build
    # its enums, a third of this module's cost in every Python process of every attempt.
    import faulthandler

    folder = os.environ.get("REPROSPEC_STACK_DIR")
    if not folder or not hasattr(_signal_numbers, "SIGURG"):
        return
    path = os.path.join(folder, f"stack-{os.getpid()}.txt")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    if _state.get("tasks"):
        os.write(fd, _TASKS_FOLLOW)
    # chain=False: the engine's ask runs no other handler; but `_dump_tasks`, where asyncio
    # runs (`_watch_tasks`).
    chain = bool(_state.get("tasks"))
    faulthandler.register(_signal_numbers.SIGURG, file=fd, all_threads=True, chain=chain)
    old, _state["fd"] = _state["fd"], fd
    if old >= 0:
        # After a fork this is the child's copy of the parent's file: the parent keeps its own.
        os.close(old)


def _watch_tasks(asyncio: ModuleType) -> None:
    """Once asyncio is imported, SIGURG dumps its tasks too (`_dump_tasks`), after the
    threads' stacks faulthandler writes.

    A suspended coroutine is on no thread's stack: a coroutine deadlock (`await
    asyncio.Event().wait()` on an event no one sets, two tasks awaiting each other's
    futures) showed only the event loop's `select` under `asyncio.run(main())`, and read
    `hang in <module>`. faulthandler's dump is C code, which can walk no task: a Python
    handler can, chained after it (Python runs it in the main thread, where a loop waiting
    in `select` wakes for it). Only where asyncio runs: elsewhere SIGURG stays ignored by
    default, as a program sees it. `signal.signal` replaces faulthandler's handler, so
    faulthandler is registered again after it, chaining to it."""
    del asyncio
    import faulthandler

    if _state["fd"] < 0:
        return  # no dump armed (no REPROSPEC_STACK_DIR)
    try:
        faulthandler.unregister(_signal_numbers.SIGURG)
        _signal_numbers.signal(_signal_numbers.SIGURG, _dump_tasks)
        _state["tasks"] = 1
    except (ValueError, OSError):  # imported outside the main thread: no Python handler
        pass
    _register()


def _dump_tasks(signum: int, frame: object) -> None:
    """Append each pending asyncio task of the main thread's running loop to the stack dump,
    as faulthandler writes a thread (`Task NAME (most recent call first):`, then each
    coroutine it awaits in, innermost first: `File "x.py", line 4 in waiter`), in asyncio's
    order; a task that awaits another task or a gather is tagged so (`Task NAME (most recent
    call first): [awaits a task]`): the fact, which the engine ranks (hungstacks'
    `_awaited`), not an order decided here. Never raises; ends with `_TASKS_END`, tasks or
    none."""
    del signum, frame
    fd = _state["fd"]
    if fd < 0:
        return
    text = ""
    try:
        asyncio = sys.modules.get("asyncio")
        loop = asyncio.events._get_running_loop() if asyncio is not None else None
        if loop is None or asyncio is None:
            return
        tasks = []
        for task in asyncio.all_tasks(loop):
            coro: object = task.get_coro()
            frames: list[str] = []
            while coro is not None and len(frames) < 100:
                at = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
                if at is None:
                    break
                code = at.f_code
                frames.append(f'  File "{code.co_filename}", line {at.f_lineno} in {code.co_name}')
                coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
            # What it waits on (the future it is blocked on, asyncio's own record, both
            # the C and the Python Task's): another task, or a gather of tasks.
            waiter = getattr(task, "_fut_waiter", None)
            on_tasks = type(waiter).__name__ in ("Task", "_GatheringFuture")
            tasks.append((on_tasks, task.get_name(), frames[::-1]))
        text = "".join(
            f"\nTask {name} (most recent call first):{' [awaits a task]' if on_tasks else ''}\n"
            + "".join(f + "\n" for f in frames)
            for on_tasks, name, frames in tasks
            if frames
        )
    except Exception:
        pass
    finally:
        try:  # noqa: SIM105
            os.write(fd, text.encode("ascii", "backslashreplace") + b"\n" + _TASKS_END)
        except Exception:
            pass


def _after_fork() -> None:
    # A forked worker inherits the parent's registration, which would write into the
    # parent's file; give it its own. (No contextlib: every Python process of the attempt
    # imports this module, so it imports as little as it can.) The signals the parent sent
    # are the parent's: the child's own children are other pids.
    _sent.clear()
    _sent_groups.clear()
    try:  # noqa: SIM105
        _register()
    except Exception:
        pass


def _arm_fatal() -> None:
    """faulthandler on the fatal signals, for the thread that took the signal only.

    Not every thread's (PYTHONFAULTHANDLER's way): faulthandler reads the other threads'
    frames while they keep running, and when one of them is changing its frames the dump
    itself faults, so the process dies of SIGSEGV where it took a SIGBUS, a SIGFPE or a
    SIGABRT (1 death in 7 with two threads running Python: test_local_runner's
    test_a_fatal_signal_is_the_one_the_process_took). A verdict must name the signal the
    program took. Armed already (the spec's PYTHONFAULTHANDLER, `-X faulthandler`): as asked.
    """
    import faulthandler

    if not faulthandler.is_enabled():
        faulthandler.enable(all_threads=False)


def _record_end() -> None:
    """At a normal exit or an os._exit (not a signal's death), ended-<pid>.txt: the parent's
    pid, whether this process ever reaped a child, and the exit status it asked for.

    `sh -c 'python x.py'` is an attempt's root that forks the program: the engine reads
    the shell's count of its children (the program), not the program's. This record is the
    program's own (process/tree.py, `program_ran_alone`): the kernel's count of the page
    faults of the children it reaped (/proc/self/stat's cminflt, 0: none), and whether it
    ignores SIGCHLD (its children then go uncounted). Registered first, it runs after every
    other exit handler (multiprocessing's joins its children in one).

    It is written at exit, before the interpreter's shutdown and libc's exit(), where a
    `__del__` or a native library's destructor may still die of a signal (a C++ global's,
    torch's at teardown): the shell then reports 128 + N. The status asked for (`sys.exit`'s,
    0 for a program that ran to its end) tells that death from a `sys.exit(139)` of its
    own: the engine believes the record only of the status it asked for.
    """
    folder = os.environ.get("REPROSPEC_STACK_DIR")
    if not folder:
        return
    import atexit

    asked = [0]
    sys_exit = sys.exit
    # The parent's executable as this program begins, on each record's second line: the
    # engine believes a record of the root's child only where its parent was a shell that
    # forked it (`sh -c 'python x.py'`), not a program the shell exec'd (bash's
    # `timeout -s KILL 60 python x.py`), or a Python root's child (process/tree.py).
    try:
        parent = os.fsencode(os.readlink(f"/proc/{os.getppid()}/exe"))
    except Exception:
        parent = b""

    def _exit(status: str | int | None = None) -> None:
        # As the interpreter turns SystemExit's code into a status: None 0, an int as the
        # OS takes it (its low byte), anything else (printed) 1.
        asked[0] = 0 if status is None else status & 0xFF if isinstance(status, int) else 1
        _forget_raised()
        sys_exit(status)

    sys.exit = _exit  # type: ignore[assignment]

    def _ended() -> None:
        try:
            fd = os.open(f"/proc/{os.getpid()}/stat", os.O_RDONLY)
            try:
                stat = os.read(fd, 4096)
            finally:
                os.close(fd)
            fields = stat[stat.rfind(b")") + 2 :].split()
            path = os.path.join(folder, f"ended-{os.getpid()}.txt")
            out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                # ppid (field 4), cminflt (11), sigignore (33), counted from the state (3).
                mine = (fields[1], fields[8], fields[30], str(asked[0]).encode())
                os.write(out, b" ".join(mine) + b"\n" + parent + b"\n")
            finally:
                os.close(out)
        except Exception:
            pass

    atexit.register(_ended)

    # Begun: the parent's pid alone (and its executable), which `_ended` replaces. A record
    # left so says the process died of a signal (it asked for no status: sys.exit, os._exit
    # and a run to its end all rewrite it), where `sh -c 'python kill.py'` reports 137 of
    # its one program's SIGKILL as it would a `sys.exit(137)`: the shell's status is that
    # death (process/tree.py `program_died`), as a list command's -9 is.
    # A folder it cannot write to loses this record only: os._exit's below is still noted.
    began = os.path.join(folder, f"ended-{os.getpid()}.txt")
    try:
        out = os.open(began, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(out, b"%d\n%s\n" % (os.getppid(), parent))
        finally:
            os.close(out)
    except Exception:
        pass

    # An exec replaces this program (same pid) by one that may write no record of its own
    # end: the begun record would call its exit status a death. A Python one writes its own.
    for name in ("execv", "execve"):
        _forget_begun_on(name, began, os.getpid())

    # os._exit skips atexit: `os._exit(139)` read as the shell's word of a SIGSEGV under
    # `sh -c`. Its status is recorded as sys.exit's is, by this process only:
    # a fork child's os._exit (multiprocessing's, after its target) is no program's end.
    os_exit = os._exit
    importer = os.getpid()

    def _os_exit(status: int) -> NoReturn:
        if os.getpid() == importer:
            asked[0] = status & 0xFF if isinstance(status, int) else 1
            _ended()
        os_exit(status)

    os._exit = _os_exit


def _forget_begun_on(name: str, began: str, importer: int) -> None:
    """Wrap `os.<name>` (execv, execve: os.execl, execlp, execvp and the rest call them) to
    remove this process's begun record before it execs another program (not a fork
    child's exec: the record is its parent's)."""
    original = getattr(os, name)

    def _exec(*args: object, **kwargs: object) -> NoReturn:
        if os.getpid() == importer:
            try:  # noqa: SIM105
                os.unlink(began)
            except Exception:
                pass
        original(*args, **kwargs)
        raise OSError("exec returned")  # unreachable: an exec that fails raises

    setattr(os, name, _exec)


def _record_chdir() -> None:
    """Each folder a process moves to (os.chdir), or starts a child in (subprocess's `cwd=`)
    -> a line of cwds.txt in the attempt folder.

    The kernel writes a crash's `core` (kernel.core_pattern `core`, `core.%p`) in the
    crashing process's working directory: a program that moved (hydra's outputs/DATE/TIME,
    `os.chdir(run_dir)`), or ran a test binary in its build folder, left its core there,
    where the engine, looking in the workdir, said it left none and the core stayed in the
    user's folder. native/cores.py's MOVED_TO names the file, and the engine looks in each
    folder it lists too. The folder is read at each move: a preload server's attempt gets
    its REPROSPEC_STACK_DIR after the fork.
    """
    chdir = os.chdir

    def _chdir(path: object) -> None:  # os.chdir's own parameter name: chdir(path=...)
        chdir(path)  # type: ignore[arg-type]
        _moved_to(os.getcwd())

    os.chdir = _chdir

    def _watch_cwd(module: ModuleType) -> None:
        popen = module.Popen
        init = popen.__init__

        def __init__(self: object, *args: object, **kwargs: object) -> None:
            cwd = kwargs.get("cwd")
            if cwd is not None:
                try:  # noqa: SIM105 (no contextlib: imported by every Python process)
                    _moved_to(os.path.abspath(os.fsdecode(cwd)))  # type: ignore[arg-type]
                except Exception:
                    pass
            init(self, *args, **kwargs)

        popen.__init__ = __init__

    if "subprocess" in sys.modules:  # imported before this module (a site hook's import)
        _watch_cwd(sys.modules["subprocess"])
    else:
        _when_imported("subprocess", _watch_cwd)


def _moved_to(folder: str) -> None:
    """`folder` as a line of the attempt folder's cwds.txt (never raises)."""
    stack_dir = os.environ.get("REPROSPEC_STACK_DIR")
    if not stack_dir:
        return
    try:
        line = folder.encode(errors="surrogateescape") + b"\n"
        # O_APPEND: one small write per line, whole, however many processes move.
        out = os.open(
            os.path.join(stack_dir, "cwds.txt"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
        )
        try:
            os.write(out, line)
        finally:
            os.close(out)
    except Exception:
        pass


# The name of an uncaught exception's record: process/tree.py's `keep_program_raised` reads
# it (the same prefix there), keeps the program's and removes the rest.
_RAISED_PREFIX = "raised-"
# `path`: this process's record of the uncaught exception its main thread died of, once
# written; `unrecorded`: the pid of a process that died of one it left unrecorded
# (`_leave_unrecorded`).
_raised = {"path": "", "unrecorded": ""}


def _record_raised() -> None:
    """How the main thread ended -> raised-<pid>.txt in the attempt folder: the parent's pid
    on the first line, then the traceback of the uncaught exception it died of exactly as
    the default hook prints it (`traceback.format_exception`), or nothing more where it
    died of none (written at exit).

    stderr holds the same traceback, but the threads' tracebacks (threading.excepthook's
    "Exception in thread ...:" blocks) print on the same stream at the same moment, and
    interleave with it a line or a character at a time: read from stderr, the exception
    that ended the process was a thread's TypeError, or none at all, in up to 16 attempts
    of 20 of a program whose four threads raised as its main thread did. This
    record is written by the thread that dies of it, before the hook prints, so the engine
    reads the ending exception whole (outcome/classify.py prefers it to stderr); and a
    program whose main thread died of none says so, where its threads' interleaved
    tracebacks could pass for one.

    The wrapper is installed whatever the environment says; the folder is read when the
    hook runs: a fork server's attempt gets its REPROSPEC_STACK_DIR after the fork. A hook
    the program sets itself replaces this one: then nothing is recorded, and stderr is read
    as ever.
    """
    import atexit

    hook = sys.excepthook

    def _excepthook(
        kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        try:
            threading = sys.modules.get("threading")
            # A thread's exception passed on to this hook (a threading.excepthook that
            # failed) ended no process.
            if threading is None or threading.current_thread() is threading.main_thread():
                if issubclass(kind, KeyboardInterrupt) and "traceback" not in sys.modules:
                    _leave_unrecorded()
                else:
                    import traceback

                    _write_raised("".join(traceback.format_exception(kind, value, tb)))
        except Exception:
            pass
        hook(kind, value, tb)

    def _none_raised() -> None:
        # At exit (the interpreter runs atexit after it printed an uncaught exception,
        # after the threads were joined): no record yet, and the hook still this one's, so
        # that none could pass it by unrecorded: the main thread died of no exception.
        if (
            not _raised["path"].endswith(f"-{os.getpid()}.txt")
            and _raised["unrecorded"] != str(os.getpid())
            and sys.excepthook is _excepthook
        ):
            try:  # noqa: SIM105
                _write_raised("")
            except Exception:
                pass

    sys.excepthook = _excepthook
    atexit.register(_none_raised)


def _write_raised(text: str) -> None:
    folder = os.environ.get("REPROSPEC_STACK_DIR")
    if not folder:
        return
    path = os.path.join(folder, f"{_RAISED_PREFIX}{os.getpid()}.txt")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, f"{os.getppid()}\n{text}".encode("utf-8", "surrogateescape"))
    finally:
        os.close(fd)
    _raised["path"] = path if text else ""


def _leave_unrecorded() -> None:
    """An uncaught KeyboardInterrupt, where `traceback` is not imported yet: no record,
    stderr read as ever (none written at exit either). This process wrote no record
    before: writing one imports `traceback`.

    CPython ends such a program by SIGINT's default action, as a shell's Ctrl-C does (a
    shell says 130), unless code run after the exception evaluates a string (`exec`,
    `eval`): that clears its note of the KeyboardInterrupt, and it exits 1. Importing
    `traceback` does, through tokenize's namedtuple: every program's uncaught
    KeyboardInterrupt exited 1 under the engine, `error exit 1 KeyboardInterrupt`, where
    it dies of SIGINT alone."""
    _raised["unrecorded"] = str(os.getpid())


def _forget_raised() -> None:
    """sys.exit: a program that printed an exception through sys.excepthook itself and went
    on to exit its own way did not die of it; at exit its record says it died of none."""
    _raised["path"] = ""


class _ProcessLines:
    """Lines appended to PREFIX-<pid>.txt in `folder`, one write each (a crash loses none
    written); a forked worker opens a file of its own at its first line."""

    def __init__(self, folder: str, prefix: str) -> None:
        self._folder = folder
        self._prefix = prefix
        self._pid = -1
        self._fd = -1

    def write(self, line: str) -> None:
        pid = os.getpid()
        if self._pid != pid:
            file = os.path.join(self._folder, f"{self._prefix}-{pid}.txt")
            self._fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._pid = pid
        os.write(self._fd, (line + "\n").encode("utf-8", "surrogateescape"))


def _record_imports() -> None:
    """`reprospec capture`: every module this process loads, one name a line, as it loads.

    Asked for by REPROSPEC_RECORD_IMPORTS=1. The interpreter's `import` audit event,
    raised for each module the import system loads (`import x` and
    importlib.import_module alike; a name already in sys.modules is not loaded), whatever
    finder serves it, writes the name with one write to imports-<pid>.txt in the
    attempt folder: the list survives a segfault and a hang, where an atexit handler
    never runs, and a forked worker writes a file of its own. A finder first on
    sys.meta_path, which finds nothing (the real finders go on as before), records the
    folders modules are looked for in and the script the process runs.
    """
    folder = os.environ.get("REPROSPEC_STACK_DIR") or ""
    if not folder or os.environ.get("REPROSPEC_RECORD_IMPORTS") != "1":
        return
    seen: set[str] = set()  # the names written, each once
    looked: set[str] = set()  # the names the finder saw (its sys.path and script, once)
    imports = _ProcessLines(folder, "imports")
    where = {"main": -1}
    # The folders the modules are looked for in (PYTHONPATH=src, a program's own
    # sys.path.insert): capture finds the workdir's modules there, not only in the
    # workdir and the script's folder. Each once, as it first appears.
    searched: set[str] = set()
    paths = _ProcessLines(folder, "syspath")

    class _Recorder:
        @staticmethod
        def find_spec(name: str, _path: object = None, _target: object = None) -> None:
            try:
                if name in looked:
                    return
                looked.add(name)
                for entry in sys.path:
                    if entry not in searched and isinstance(entry, str):
                        searched.add(entry)
                        paths.write(os.path.abspath(entry))
                pid = os.getpid()
                if where["main"] != pid and sys.argv and os.path.isfile(sys.argv[0]):
                    # The script this process runs is no import: a program started by a
                    # wrapper (`sh run.sh` running `python app.py`) left app.py out of the
                    # spec's files, and its bundle could not rerun it. Its own file, once.
                    where["main"] = pid
                    script = os.path.abspath(sys.argv[0]) + "\n"
                    main = os.path.join(folder, f"main-{pid}.txt")
                    fd = os.open(main, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    try:
                        os.write(fd, script.encode())
                    finally:
                        os.close(fd)
            except Exception:
                pass

    sys.meta_path.insert(0, _Recorder)
    # The files whose code ran as a module: `import` names what was looked for, found or not
    # (a failed `from mylib import x` put the workdir's mylib/ in the spec's files). A
    # module's body runs through the builtin exec (importlib's loaders, pytest's rewriting,
    # runpy), whose `exec` event carries its code object: co_filename is the file loaded.
    ran: set[str] = set()
    loaded = _ProcessLines(folder, "loaded")

    def _imported(event: str, args: tuple[object, ...]) -> None:
        # Raised before any finder is asked: a finder put ahead of the recorder later
        # (pytest's assertion rewriting, for conftest.py, the test modules and every
        # plugin it loads) kept those from a list the finder wrote, and capture pinned
        # no plugin and carried no conftest.py.
        try:
            if event == "exec":
                file = getattr(args[0], "co_filename", None)  # exec of a string has none
                if isinstance(file, str) and file.endswith(".py") and file not in ran:
                    ran.add(file)
                    loaded.write(os.path.abspath(file))
                return
            if event != "import":
                return
            name = args[0]
            if isinstance(name, str) and name not in seen:
                seen.add(name)
                imports.write(name)
        except Exception:
            pass

    sys.addaudithook(_imported)
    _record_reads(folder)


def _record_reads(folder: str) -> None:
    """`reprospec capture`: every file this process opens for reading, one path a line.

    A program needs its data as it needs its modules (a config.yaml, a CSV, a checkpoint):
    a spec whose `files` leave them out fails elsewhere with FileNotFoundError, not the bug.
    The interpreter raises an `open` audit event for `open()`, `os.open` and its own reads
    alike; written as it happens (opened-<pid>.txt, one write a path), as the imports are.
    What the path is (under the workdir, there before the run, small enough to carry) is
    capture's to judge (capture/footprint.py), not this hook's: it must stay cheap.
    """
    seen: set[str] = set()
    opened = _ProcessLines(folder, "opened")
    where = {"busy": 0}
    written = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def _opened(event: str, args: tuple[object, ...]) -> None:
        if event != "open" or where["busy"]:
            return
        where["busy"] = 1  # the hook's own os.open raises the event again
        try:
            path, _mode, flags = args
            if isinstance(path, (str, bytes)) and not (isinstance(flags, int) and flags & written):
                name = os.path.abspath(os.fsdecode(path))
                if name not in seen and not name.endswith(".pyc"):  # imports are recorded
                    seen.add(name)
                    # One path a line: a newline in a name (`new\nline.txt`) escaped, and
                    # the backslash with it (capture/footprint.opened reads them back).
                    opened.write(name.replace("\\", "\\\\").replace("\n", "\\n"))
        except Exception:
            pass
        finally:
            where["busy"] = 0

    sys.addaudithook(_opened)


def _hide_installs() -> None:
    """`reprospec capture`'s verify: the user's editable installs of the workdir's project,
    hidden, so that the copy of the spec imports the copy's files or nothing.

    REPROSPEC_HIDE_INSTALLS holds `{"roots": [...], "modules": [...]}`: the folders the
    installs serve their modules from (the checkout's `src/`) and the top-level modules
    they serve. An editable install is a `.pth` path or a finder of its own on every
    interpreter start; the copy is first on the path (the spec's PYTHONPATH), but a module
    the copy lacked came from the checkout unseen, and the verify said `reproduced` of a
    spec whose bundle failed elsewhere with ModuleNotFoundError. The roots leave
    sys.path, and a finder first on sys.meta_path serves those modules from the path
    alone (never the install's own finder), or says what was hidden.
    """
    text = os.environ.get("REPROSPEC_HIDE_INSTALLS")
    if not text:
        return
    import importlib.machinery
    import json

    hidden = json.loads(text)
    roots = [os.path.abspath(r) for r in hidden["roots"]]
    tops = frozenset(hidden["modules"])
    sys.path[:] = [e for e in sys.path if not (isinstance(e, str) and os.path.abspath(e) in roots)]

    def under(origin: str | None) -> bool:
        return origin is not None and any(origin.startswith(r + os.sep) for r in roots)

    class _Hidden:
        @staticmethod
        def find_spec(
            name: str, path: Sequence[str] | None = None, _target: object = None
        ) -> importlib.machinery.ModuleSpec | None:
            if name.partition(".")[0] not in tops:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and not under(spec.origin):
                return spec
            parents = name.split(".")[:-1]
            there = [os.path.join(root, *parents) for root in roots]
            if importlib.machinery.PathFinder.find_spec(name, there) is None:
                return None  # nowhere: Python's own "No module named"
            raise ModuleNotFoundError(
                f"No module named {name!r} in the copy of the spec: reprospec's verify "
                f"hid your editable install of it ({', '.join(roots)}), which the spec "
                "does not carry",
                name=name,
            )

    sys.meta_path.insert(0, _Hidden)


def _perturb() -> None:
    """environment.perturb's in-interpreter part, before any user code (perturb/apply.py).

    REPROSPEC_PERTURB: `switch_interval=1e-06;gc=1,1,1;torch_threads=2;...`.
    """
    text = os.environ.get("REPROSPEC_PERTURB")
    if not text:
        return
    settings = dict(item.split("=", 1) for item in text.split(";") if "=" in item)
    if "switch_interval" in settings:
        sys.setswitchinterval(float(settings["switch_interval"]))
    if "gc" in settings:
        import gc

        gc.set_threshold(*(int(n) for n in settings["gc"].split(",")))
    threads = settings.get("torch_threads")
    interop = settings.get("torch_interop_threads")
    if threads or interop:
        _when_imported("torch", lambda torch: _torch_threads(torch, threads, interop))


def _torch_threads(torch: ModuleType, threads: str | None, interop: str | None) -> None:
    if threads:
        torch.set_num_threads(int(threads))
    if interop:
        # Only before torch's first inter-op work, which is why it is set at import.
        torch.set_num_interop_threads(int(interop))


def _when_imported(name: str, then: Callable[[ModuleType], None]) -> None:
    """Call `then(module)` once `name` has been imported (a meta path finder that wraps
    the module's loader): torch's pools are set right after torch itself starts.

    The finder is a plain class (the finder protocol is one method): importlib.abc's
    MetaPathFinder would import importlib.abc, 12 ms of typing and importlib.resources in
    every Python process of an attempt that watches a module (`_watch_children`: all)."""

    class _Finder:
        def find_spec(
            self,
            fullname: str,
            path: Sequence[str] | None,  # noqa: ARG002 (the finder protocol)
            target: ModuleType | None = None,  # noqa: ARG002
        ) -> ModuleSpec | None:
            if fullname != name:
                return None
            import importlib.util

            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module: ModuleType) -> None:
                run(module)
                try:
                    then(module)
                except Exception as exc:
                    _report_perturb(exc)

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, _Finder())


def _watch_children() -> None:
    """A `child_exit` event for each child a Python process's multiprocessing reaps after
    it died of a signal: the death only its parent saw.

    A DataLoader worker killed by SIGKILL (the OOM killer's) leaves no core and no
    faulthandler report, and torch reaps it itself, so the engine never sees its status;
    what the main process prints is a race in torch: its "DataLoader worker (pid N) is
    killed by signal: Killed.", or, while it was fetching a batch the worker had just sent,
    a ConnectionResetError of its own (1 attempt in 6), which read as the main process's
    error. Every reaping goes through the Popen's poll() (`exitcode`, `join()`,
    `is_alive()`, and multiprocessing's own joins at exit), so the status is seen whichever
    way the main process goes on. Each event says whether the child ran torch's DataLoader
    worker loop (`dataloader`; such a worker's index, `worker`, where its start told it),
    and its process name (`ForkPoolWorker-2`): outcome/evidence.py reads them. Every start
    method: fork and spawn share popen_fork's poll(); forkserver's poll() reads the status
    its server reaped, and is wrapped apart. A death
    by a signal the parent sent it itself (`Process.kill()`, `terminate()`, its own
    `os.kill`, `os.killpg` of its group) is its doing, not written. Installed whether or
    not this process has an events file (a preload server has none: its forked attempts,
    which inherit the hooks, do); written where it has one.
    """
    _when_imported("multiprocessing.popen_fork", _watch_popen)
    _when_imported("multiprocessing.popen_forkserver", _watch_poll)
    _watch_kills()


# The signals this process sent each pid (os.kill): a child's death by one of them is the
# parent's doing. multiprocessing's terminate() and kill(), torch.multiprocessing's and
# torchrun's shutdown of the other ranks (os.kill, SIGTERM then SIGKILL) all go through it.
_sent: dict[int, set[int]] = {}
# The same for process groups (os.killpg): a child leading its own group (a launcher's
# setsid, start_new_session) is stopped by its group's id, read when its death is polled.
_sent_groups: dict[int, set[int]] = {}


def _watch_kills() -> None:
    kill, killpg = os.kill, os.killpg

    # A kill that fails (ESRCH, EPERM) raises before its event: only a signal sent is one.
    def _kill(pid: int, sig: int) -> None:
        try:  # noqa: SIM105 (no contextlib: every Python process of the attempt imports this)
            _sent.setdefault(int(pid), set()).add(int(sig))
        except Exception:
            pass
        kill(pid, sig)
        try:
            mine = (0, -1, os.getpid(), -os.getpgid(0))
            if int(sig) in _DEATHS and int(pid) not in mine:
                _signalled(int(pid), int(sig))
        except Exception:
            pass

    def _killpg(pgid: int, sig: int) -> None:
        try:  # noqa: SIM105
            _sent_groups.setdefault(int(pgid) or os.getpgid(0), set()).add(int(sig))
        except Exception:
            pass
        killpg(pgid, sig)
        try:
            group = int(pgid) or os.getpgid(0)
            if int(sig) in _DEATHS and group != os.getpgid(0):
                _signalled(-group, int(sig))
        except Exception:
            pass

    os.kill = _kill
    os.killpg = _killpg


def _group_of(pid: object) -> int | None:
    """`pid`'s process group, read before its status is (a zombie's /proc entry still says
    it); None where no killpg was sent (the common case reads nothing) or it is gone."""
    if not _sent_groups or not isinstance(pid, int):
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[2])
    except (OSError, ValueError, IndexError):
        return None


def _watch_popen(module: ModuleType) -> None:
    popen = module.Popen
    init = popen.__init__

    def __init__(self: object, process_obj: object) -> None:
        target = getattr(process_obj, "_target", None)
        loop = getattr(target, "__module__", None) == "torch.utils.data._utils.worker"
        worker = _worker_id(process_obj) if loop else None
        self._reprospec_child = (str(getattr(process_obj, "name", "")), loop, worker)  # type: ignore[attr-defined]
        init(self, process_obj)

    popen.__init__ = __init__
    _watch_poll(module)


def _worker_id(process_obj: object) -> int | None:
    """A DataLoader worker's index, as torch gives it to its worker loop (`worker_id`): the
    `child_exit` event of its death names it, `DataLoader worker 1 (pid N) died of SIGSEGV`,
    where it read `a DataLoader worker pid N`. Read through the loop's signature,
    not by position (the 11th argument in torch 2.x): a torch that moves it still names it,
    one that renames it names none. Only a DataLoader worker's start gets here, in a process
    that imported torch, which imported inspect long before. None where it cannot tell."""
    target = getattr(process_obj, "_target", None)
    if not callable(target):
        return None
    try:
        import inspect

        loop = inspect.signature(target)
        args = getattr(process_obj, "_args", ())
        kwargs = getattr(process_obj, "_kwargs", {})
        value = loop.bind_partial(*args, **kwargs).arguments.get("worker_id")
    except Exception:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _watch_poll(module: ModuleType) -> None:
    """Wrap `module.Popen.poll`: its first status of a death by a signal is an event."""
    popen = module.Popen
    poll = popen.poll

    def watched(self: object, flag: int = os.WNOHANG) -> int | None:
        before = getattr(self, "returncode", None)
        pid = getattr(self, "pid", None)
        group = _group_of(pid) if before is None else None
        code: int | None = poll(self, flag)
        if before is None and isinstance(code, int) and code < 0:
            sent = _sent.get(pid, set()) if isinstance(pid, int) else set()
            if -code not in sent | _sent_groups.get(group or -1, set()):
                _child_died(self, -code)
        return code

    popen.poll = watched


# The signals whose death of a child the engine calls a crash (core/signals.py's
# CRASH_SIGNALS): one this process sends another is written as a `signalled` event, so
# the death is its doing, wherever the child is reaped (by the engine, as an orphan).
_DEATHS = frozenset(
    getattr(_signal_numbers, name)
    for name in ("SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGKILL",
                 "SIGSEGV", "SIGXCPU", "SIGSYS")
    if hasattr(_signal_numbers, name)
)  # fmt: skip


def _signalled(pid: int, number: int) -> None:
    """Append the `signalled` event: this process sent `pid` a signal that kills it (a
    test's teardown SIGKILLs the server it started); a negative `pid` is a process group,
    as kill(2) takes it (`os.killpg`, `os.kill(-pgid, ...)`). Never raises."""
    _write_event({"event": "signalled", "pid": pid, "signal": _signal_name(number)})


def _child_died(popen: object, number: int) -> None:
    """Append the `child_exit` event (one write to the O_APPEND events file; never raises);
    a DataLoader worker's names its index (`worker`) where its start told it."""
    process, loop, worker = getattr(popen, "_reprospec_child", ("", False, None))
    fields: dict[str, object] = {
        "event": "child_exit",
        "pid": getattr(popen, "pid", None),
        "signal": _signal_name(number),
        "name": process,
        "dataloader": loop,
        "parent": os.getpid(),
    }
    if worker is not None:
        fields["worker"] = worker
    _write_event(fields)


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _write_event(fields: dict[str, object]) -> None:
    """Append one event, stamped, to the attempt's events file: one write to the O_APPEND
    file; nothing where there is none (a preload server); never raises."""
    try:
        import json
        import time

        path = os.environ.get("REPROSPEC_EVENTS")
        if not path:
            return
        event = {"t": round(time.time(), 4), **fields}
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(event) + "\n").encode())
        finally:
            os.close(fd)
    except Exception:
        pass


def _report_perturb(exc: BaseException) -> None:
    try:  # noqa: SIM105 (no contextlib: every Python process of the attempt imports this)
        sys.stderr.write(f"reprospec: perturbation not applied: {type(exc).__name__}: {exc}\n")
    except Exception:
        pass


# Set on `sys` (each interpreter's own; a forked child inherits it with the hooks
# themselves) once this process's hooks are in: a second copy of this module further
# along sys.path, which the first chains to (an image's own, after the one the docker
# runner mounts), installs nothing. Both wrapped multiprocessing's Popen, so a dead worker's
# stack showed `sitecustomize.py ... in __init__` twice, os.kill and sys.exit were
# wrapped twice, and every import was recorded twice.
_INSTALLED = "_reprospec_stackdump_installed"


def _install() -> None:
    if getattr(sys, _INSTALLED, False):
        return
    setattr(sys, _INSTALLED, True)
    try:
        _perturb()
    except Exception as exc:
        _report_perturb(exc)
    try:  # noqa: SIM105 (no stderr to write to: nothing to arm)
        _arm_fatal()
    except Exception:
        pass
    try:  # noqa: SIM105
        _record_end()
    except Exception:
        pass
    try:  # noqa: SIM105
        _record_raised()
    except Exception:
        pass
    try:  # noqa: SIM105
        _record_chdir()
    except Exception:
        pass
    try:  # noqa: SIM105
        _watch_children()
    except Exception:
        pass
    try:  # noqa: SIM105
        _hide_installs()
    except Exception:
        pass
    try:  # noqa: SIM105
        _record_imports()
    except Exception:
        pass
    try:
        _when_imported("asyncio", _watch_tasks)
        _register()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork)
    except Exception:
        pass


def _chain() -> None:
    """Import the sitecustomize this one shadows (a user's, or the distribution's)."""
    # The same folder as this one's, by device and inode: one stat per entry of sys.path,
    # where realpath would take one per component of each.
    here = os.stat(os.path.dirname(os.path.abspath(__file__)))
    ours = sys.modules.get("sitecustomize")
    saved = list(sys.path)

    def elsewhere(entry: str) -> bool:
        try:
            found = os.stat(entry or os.curdir)
        except Exception:
            return True
        return (found.st_dev, found.st_ino) != (here.st_dev, here.st_ino)

    sys.path[:] = [entry for entry in sys.path if elsewhere(entry)]
    sys.modules.pop("sitecustomize", None)
    try:
        __import__("sitecustomize")
    except ImportError as exc:
        if getattr(exc, "name", None) != "sitecustomize":
            _report(exc)
    except Exception as exc:
        _report(exc)
    finally:
        sys.path[:] = saved
        if "sitecustomize" not in sys.modules and ours is not None:
            sys.modules["sitecustomize"] = ours


def _report(exc: BaseException) -> None:
    # Same wording site.py uses for a failing sitecustomize: the user's, not ours.
    try:
        name = type(exc).__name__
        sys.stderr.write(
            f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{name}: {exc}\n"
        )
    except Exception:
        pass


_install()
try:  # noqa: SIM105
    _chain()
except Exception:
    pass
