"""How a report names the paths of a run on the H200 (tests/data/gpu/machine/): a venv whose
base interpreter is the distribution's /usr, beside /usr/local/cuda."""

from __future__ import annotations

import json

from reprospec.pipeline.stages import path_labels
from reprospec.report.paths import PathNames
from reprospec.spec.load import load_spec
from tests.support.paths import DATA, ROOT

RECORDED = DATA / "gpu" / "machine" / "cuda-smoke.results.json"


def test_a_python_in_usr_names_only_its_own_folders() -> None:
    run = json.loads(RECORDED.read_text())
    environment = run["environment"]
    assert environment["python"]["base_prefix"] == "/usr"
    cuda_home = environment["env"]["CUDA_HOME"]
    library_path = environment["env"]["LD_LIBRARY_PATH"]
    names = PathNames(path_labels(load_spec(ROOT / "specs" / "segfault.yaml"), environment))
    # The recorded report read `<python>/local/cuda` and `<python>/local/nvidia/lib64`.
    assert names.shorten(cuda_home) == "/usr/local/cuda"
    assert names.shorten(library_path) == library_path
    assert (
        names.shorten("/usr/lib/python3.12/threading.py") == "<python>/lib/python3.12/threading.py"
    )
    assert names.shorten("/usr/lib/python3/dist-packages/yaml/x.py") == (
        "<python>/lib/python3/dist-packages/yaml/x.py"
    )
    assert names.shorten("/opt/torch/.venv/lib/python3.12/site-packages/torch/x.py") == (
        "<venv>/lib/python3.12/site-packages/torch/x.py"
    )


def test_a_python_of_its_own_prefix_is_named_whole() -> None:
    environment = {
        "python": {"prefix": "/v", "base_prefix": "/home/a/.pyenv/3.11", "version": "3.11.7"}
    }
    names = PathNames(path_labels(load_spec(ROOT / "specs" / "segfault.yaml"), environment))
    assert names.shorten("/home/a/.pyenv/3.11/bin/python3") == "<python>/bin/python3"
