"""Build the workload: seed, debug switches, faults, data, model, loss, optimizer, amp, compile."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Mapping
from typing import cast

import torch

from . import config, data, models, training
from .injection import FaultPlan
from .values import JsonValue, array, obj


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    numpy = sys.modules.get("numpy")  # seeded if the workload uses it; never imported for it
    if numpy is not None:
        numpy.random.seed(seed)


def build(
    workload: Mapping[str, JsonValue],
    device: torch.device,
    seed: int,
    attempt: int,
    rank: training.Rank | None = None,
) -> training.Workload:
    """Everything `training.run_phases` needs; main-process faults with no `at` fire at its end.

    `rank`: this process's rank of a distributed workload (its own part of the data, the
    model in DistributedDataParallel, the faults meant for it).
    """
    seed_everything(seed)
    debug = obj(workload.get("debug"))
    if debug.get("anomaly_detection"):
        torch.autograd.set_detect_anomaly(True)
    if debug.get("deterministic"):
        torch.use_deterministic_algorithms(True)
    faults = FaultPlan.from_spec(
        [
            config.mapping(fault, f"workload.faults[{number}]")
            for number, fault in enumerate(array(workload.get("faults")))
        ],
        seed=seed,
        attempt=attempt,
        rank=rank.rank if rank is not None else None,
    )
    faults.device = str(device)
    # The engine fills in the default phases when the spec gives none (sections.py).
    phases = [obj(phase) for phase in array(workload["phases"])]
    data_section = obj(workload.get("data"))
    dataset_section = obj(data_section.get("dataset")) or {"builtin": "synthetic"}
    loader_options = obj(data_section.get("loader"))
    dataset = data.build_dataset(dataset_section, seed)
    model_section = obj(workload.get("model")) or {"builtin": "mlp"}
    # Only a built-in model is sized for the data; an entrypoint model sizes itself.
    # `describe` never reads an item in this process (docs/ARCHITECTURE.md).
    shape, classes = (
        ([], 0) if model_section.get("entrypoint") else data.describe(dataset, dataset_section)
    )
    model: torch.nn.Module = models.build(model_section, shape, classes).to(device)
    if rank is not None:
        model = rank.wrap(model)
    loss = training.build_loss(model_section.get("loss"))
    optimizer = training.build_optimizer(workload.get("optimizer"), model)
    amp = workload.get("amp")
    if amp:
        config.choice(amp, "workload.amp", "amp dtype", training.AMP_DTYPES)
    compile_options = workload.get("compile")
    if compile_options:
        options = compile_options if isinstance(compile_options, Mapping) else {}
        config.bind(torch.compile, "torch.compile", "workload.compile", model, **options)
        # The options go to torch.compile as the spec gives them (bind checked their names);
        # it returns the model wrapped (an OptimizedModule).
        compile_model: Callable[..., object] = torch.compile
        model = cast(torch.nn.Module, compile_model(model, **options))
    loader, batches, tracker = data.build_loader(
        dataset,
        loader_options,
        faults,
        [str(p["name"]) for p in phases],
        seed,
        ranks=(rank.rank, rank.world_size) if rank is not None else None,
    )
    work = training.Workload(
        model=model,
        loader=loader,
        batches=batches,
        tracker=tracker,
        loss=loss,
        optimizer=optimizer,
        device=device,
        amp=training.AMP_DTYPES[str(amp)] if amp else None,
        faults=faults,
        phases=phases,
        non_blocking=bool(loader_options.get("pin_memory")) and device.type == "cuda",
        rank=rank,
    )
    faults.fire_main()
    return work
