"""Fixtures of the functional tests: engine runs shared by the tests that read them.

`example_run` (one engine run per example spec, shared by every test and xdist worker that
reads it) lives in tests/conftest.py: the Slurm tests compare against it too."""
