"""Every Slurm test shares the one cluster; one that stops slurmctld holds it alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.slurm import cluster_held

# The fixture a test asks for to stop slurmctld (test_submit_timeout.py).
STOPS_SLURMCTLD = "slurmctld_pid"


@pytest.fixture(autouse=True)
def _one_cluster(request: pytest.FixtureRequest) -> Iterator[None]:
    """Held around each test (xdist's workers run modules side by side): a stopped
    slurmctld made test_cluster.py's sbatch time out beside it."""
    with cluster_held(alone=STOPS_SLURMCTLD in request.fixturenames):
        yield
