"""The reprospec harness: runs a spec's `workload` in the child (stdlib and torch only).

`python -m reprospec_harness` runs the cell named by `$REPROSPEC_CELL`;
`python -m reprospec_harness.envinfo` prints the environment as JSON.
Importing this package imports nothing: torch is loaded only where needed.
"""
