"""A mistake in the built-ins' configuration is a ConfigError (-> infra_error), never the bug.

In-process (no child): the harness modules need torch but nothing else.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeAlias

import pytest

from reprospec.harness import HARNESS_ROOT

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

sys.path.insert(0, str(HARNESS_ROOT))
from reprospec_harness import data, entrypoints, events, models, training  # noqa: E402
from reprospec_harness.config import ConfigError  # noqa: E402
from reprospec_harness.injection import FaultPlan  # noqa: E402

SHAPE, CLASSES = [3, 8, 8], 4
P = ParamSpec("P")


def config_error(call: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> str:
    with pytest.raises(ConfigError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


# What data.build_loader returns.
Built: TypeAlias = "tuple[data.tud.DataLoader, data.TaggedBatchSampler, data.FetchTracker]"


def loader(options: dict[str, Any]) -> Built:
    dataset = data.SyntheticDataset(size=8, shape=[2])
    built: Built = data.build_loader(dataset, options, FaultPlan(), ["train"], seed=0)
    return built


def test_builtin_model_params_are_checked_and_name_the_field() -> None:
    bogus = {"builtin": "mlp", "params": {"bogus_param": 3}}
    assert config_error(models.build, bogus, SHAPE, CLASSES) == (
        "workload.model.params: mlp() got an unexpected keyword argument 'bogus_param'"
    )
    hidden = {"builtin": "mlp", "params": {"hidden": -1}}
    assert config_error(models.build, hidden, SHAPE, CLASSES) == (
        "workload.model.params.hidden: expected an integer >= 1, got -1"
    )
    heads = {"builtin": "transformer-decoder", "params": {"d_model": 10, "nhead": 3}}
    assert config_error(models.build, heads, [12], 20).startswith(
        "workload.model.params: transformer-decoder(): "
    )
    unknown = config_error(models.build, {"builtin": "resnet"}, SHAPE, CLASSES)
    assert unknown.startswith("workload.model.builtin: unknown model 'resnet' (expected one of mlp")
    assert isinstance(models.build({"builtin": "cnn", "params": {"channels": 2}}, SHAPE, 4), object)


def test_synthetic_dataset_options_are_checked() -> None:
    assert config_error(data.build_dataset, {"builtin": "synthetic", "dtype": "float99"}, 0) == (
        "workload.data.dataset.dtype: unknown dtype 'float99' "
        "(expected one of float32, float16, bfloat16, float64, int64, int32, uint8, float, long)"
    )
    assert config_error(data.build_dataset, {"builtin": "synthetic", "shape": [3, 0]}, 0) == (
        "workload.data.dataset.shape[1]: expected an integer >= 1, got 0"
    )
    assert config_error(data.build_dataset, {"builtin": "synthetic", "size": "big"}, 0) == (
        "workload.data.dataset.size: expected an integer, got 'big'"
    )
    assert len(data.build_dataset({"builtin": "synthetic", "size": 5, "dtype": "int64"}, 0)) == 5


def test_loader_arguments_are_checked() -> None:
    assert config_error(loader, {"batch_size": 0}) == (
        "workload.data.loader.batch_size: expected an integer >= 1, got 0"
    )
    assert config_error(loader, {"num_workers": "two"}).startswith(
        "workload.data.loader.num_workers: expected an integer"
    )
    assert config_error(loader, {"pin_memory": "maybe"}) == (
        "workload.data.loader.pin_memory: expected true or false, got 'maybe'"
    )
    assert config_error(loader, {"num_workers": 1, "multiprocessing_context": "thread"}).startswith(
        "workload.data.loader.multiprocessing_context: unknown start method 'thread'"
    )
    assert config_error(loader, {"timeout": -1}).startswith("workload.data.loader.timeout:")
    built, batches, _ = loader({"batch_size": 4, "shuffle": "false", "num_workers": 0})
    assert len(batches) == 2
    assert built.num_workers == 0


def test_optimizer_loss_and_fault_settings_are_checked() -> None:
    model = torch.nn.Linear(2, 2)
    assert config_error(training.build_optimizer, "rmsprop", model) == (
        "workload.optimizer: unknown optimizer 'rmsprop' (expected one of sgd, adam)"
    )
    assert config_error(training.build_optimizer, {"name": "sgd", "lr": -1}, model) == (
        "workload.optimizer.lr: expected a number > 0, got -1"
    )
    assert config_error(training.build_optimizer, {"name": "adam", "momentun": 0.9}, model) == (
        "workload.optimizer.momentun: unknown option (expected name, lr, momentum, weight_decay)"
    )
    assert isinstance(
        training.build_optimizer({"name": "adam", "lr": 0.1}, model), torch.optim.Adam
    )
    assert config_error(training.build_loss, "hinge").startswith(
        "workload.model.loss: unknown loss"
    )
    assert config_error(training.build_loss, "torch.nn:NoSuchLoss") == (
        "workload.model.loss: cannot resolve 'torch.nn:NoSuchLoss': "
        "'torch.nn' has no attribute 'NoSuchLoss'"
    )
    assert config_error(FaultPlan.from_spec, [{"kind": "explode"}], seed=0, attempt=1).startswith(
        "workload.faults[0].kind: unknown fault kind 'explode'"
    )


def test_entrypoint_that_cannot_be_found_is_config_but_its_own_errors_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "userpkg_cfg.py").write_text(
        "def build(width=2):\n"
        "    raise ValueError('the bug being reproduced')\n"
        "def ok(width=2):\n"
        "    return width\n"
    )
    (tmp_path / "userpkg_dep.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    field = "workload.model"
    missing = config_error(entrypoints.call, {"entrypoint": "no_such_mod_xyz:build"}, field)
    assert missing.startswith(
        "workload.model.entrypoint: cannot import 'no_such_mod_xyz:build': "
        "no module named 'no_such_mod_xyz'"
    )
    assert config_error(entrypoints.call, {"entrypoint": "userpkg_cfg:nope"}, field) == (
        "workload.model.entrypoint: cannot resolve 'userpkg_cfg:nope': "
        "'userpkg_cfg' has no attribute 'nope'"
    )
    params = {"entrypoint": "userpkg_cfg:ok", "params": {"widht": 3}}
    assert config_error(entrypoints.call, params, field) == (
        "workload.model.params: ok() got an unexpected keyword argument 'widht'"
    )
    assert entrypoints.call({"entrypoint": "userpkg_cfg:ok", "params": {"width": 3}}, field) == 3
    # What the user's code raises, on import or when called, may be the incident itself.
    with pytest.raises(ValueError, match="the bug being reproduced"):
        entrypoints.call({"entrypoint": "userpkg_cfg:build"}, field)
    with pytest.raises(ModuleNotFoundError) as caught:
        entrypoints.call({"entrypoint": "userpkg_dep:build"}, field)
    assert not isinstance(caught.value, ConfigError)


def test_busy_watch_reports_a_slow_item_and_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    monkeypatch.setenv("REPROSPEC_EVENTS", str(path))
    monkeypatch.setattr(events, "_fd", None)
    monkeypatch.setattr(data, "BUSY_AFTER", 0.2)
    watch = data.BusyWatch(worker=1, interval=0.02)
    quick = watch.begin("train", 1, 3)
    watch.end(quick)  # fast: nothing reported
    slow = watch.begin("validation", 7, 37)
    deadline = time.monotonic() + 5
    while not slow.reported and time.monotonic() < deadline:
        time.sleep(0.02)
    watch.end(slow)
    os.close(events._fd or os.open(os.devnull, os.O_RDONLY))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["event"] for e in lines] == ["worker_busy", "worker_free"]
    busy, free = lines
    assert (busy["worker"], busy["pid"], busy["index"]) == (1, os.getpid(), 37)
    assert (busy["phase"], busy["step"]) == ("validation", 7)
    assert busy["seconds"] >= 0.2
    assert free["index"] == 37
    assert "phase" not in free  # the end does not move the location


def test_a_cuda_index_past_the_visible_devices_counts_them_in_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """lo40: `only 1 CUDA device(s) are visible`. This machine has no GPU, so torch's two
    answers are set as a one- and a two-GPU machine gives them."""
    from reprospec_harness.config import InfraError, resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for count, said in ((1, "only 1 CUDA device is visible"), (2, "only 2 CUDA devices are")):
        monkeypatch.setattr(torch.cuda, "device_count", lambda count=count: count)
        with pytest.raises(InfraError) as caught:
            resolve_device("cuda:3")
        assert str(caught.value).startswith(f"device cuda:3 requested but {said}")
