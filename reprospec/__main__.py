"""`python -m reprospec`, and the `reprospec` console script (pyproject.toml)."""

import sys


def main() -> int:
    """cli.main, its module imported here, where a Ctrl-C meets a handler: a
    KeyboardInterrupt while the CLI's modules load (a command's first ~0.1 s, before
    cli.main's own handler) printed a traceback through importlib's frames. This module and
    the package's __init__, all that loads before, are kept small for that reason.

    From the first import on, a Ctrl-C is never raised inside importlib's module locks,
    where it left the import lock held and the run hung, nor dropped where Python cannot
    raise it (core/safepoint.py, the one module loaded under Python's default handler); one
    that Python's handler, before that, dropped with the import lock held is raised here."""
    try:
        # Inside the try: its calls are where a Ctrl-C is raised, before cli.main's handler.
        _fill_closed_stdio()
        from reprospec.core import safepoint

        safepoint.install()
        safepoint.reclaim_import_lock()
        from reprospec.cli import main as cli_main
    except KeyboardInterrupt:
        print("reprospec: interrupted", file=sys.stderr)
        return 130  # errors.EXIT_INTERRUPTED, which may be what was being imported
    return cli_main()


def _fill_closed_stdio() -> None:
    """/dev/null in place of a standard stream the command was started without
    (`reprospec run SPEC >&- 2>&-`, a daemon's closed descriptors). Python sets such a
    stream to None: the first progress line was `AttributeError: 'NoneType' object has no
    attribute 'write'`, the run stopped as `internal error`, exit 3 (and with stdout closed,
    after the run, at its table). The descriptor itself is filled too: a file the run opens
    next (the results store, a log) would otherwise get it, and whatever writes to fd 1 or 2
    (a child that inherits it, faulthandler) would write into that file."""
    import os

    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name) is None:
            setattr(sys, name, os.fdopen(os.open(os.devnull, os.O_RDWR), mode, encoding="utf-8"))


if __name__ == "__main__":
    sys.exit(main())
