"""Which declared package provides a module a setup failure names."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("packages", "module", "declared"),
    [
        (["torch==2.5.1"], "torch", "torch==2.5.1"),
        (["Pillow>=10"], "PIL", "Pillow>=10"),
        (["scikit-learn"], "sklearn", "scikit-learn"),
        (["opencv-python-headless==4.9"], "cv2", "opencv-python-headless==4.9"),
        (["lightning_utilities[cli]"], "lightning_utilities", "lightning_utilities[cli]"),
        (["numpy"], "wandb", None),
    ],
)
def test_which_declared_package_provides_a_module(
    packages: list[str], module: str, declared: str | None
) -> None:
    from reprospec.outcome.setupfail import _declaring

    assert _declaring(packages, module) == declared
