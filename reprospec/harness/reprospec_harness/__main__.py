"""`python -m reprospec_harness`: run the cell named by `$REPROSPEC_CELL`."""

import sys

# Guarded: spawn and forkserver workers import this module as `__mp_main__`.
if __name__ == "__main__":
    from .run import main

    sys.exit(main())
