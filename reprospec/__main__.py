"""`python -m reprospec`."""

import sys

from reprospec.cli import main

sys.exit(main())
