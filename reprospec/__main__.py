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
        from reprospec.core import safepoint

        safepoint.install()
        safepoint.reclaim_import_lock()
        from reprospec.cli import main as cli_main
    except KeyboardInterrupt:
        print("reprospec: interrupted", file=sys.stderr)
        return 130  # errors.EXIT_INTERRUPTED, which may be what was being imported
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
