"""What amplify says under run.preload before its search: which arms fork, which run fresh."""

from __future__ import annotations

from reprospec.amplify.driver import default_tries, preload_said
from reprospec.core.sections import Perturb


def test_amplify_says_once_which_arms_fork_and_which_run_fresh() -> None:
    said = preload_said(Perturb(), default_tries())
    assert said.startswith(
        "run.preload: the base and the perturbed arms fork from the preloaded server; "
        "an arm with malloc=perturb runs fresh (perturb.malloc=perturb: glibc's thread cache"
    )
    assert said.count("runs fresh") == 1
    # ...and that such an arm's gain is measured against a base that started as it did.
    assert said.endswith(
        "; such an arm is judged against base (fresh), the base started fresh too, not "
        "against the forked base"
    )
    fresh = preload_said(Perturb(hash_seed=3), [("switch_interval", 1e-6)])
    assert fresh.startswith("run.preload: every attempt runs fresh, the base's too (the spec's")
    assert preload_said(Perturb(), [("torch.num_threads", 1)]).endswith("preloaded server")
