"""The model of cuda-fault.yaml: a Linear whose Nth forward launches a planted CUDA fault."""

from __future__ import annotations

import torch
from fault import launch_oob


class FaultyLinear(torch.nn.Module):
    """A Linear layer; its `at_call`-th forward indexes out of range or writes out of bounds."""

    def __init__(self, fault: str, at_call: int, features: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(features, classes)
        self.fault = fault
        self.at_call = at_call
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == self.at_call:
            if self.fault == "assert":
                bad = torch.tensor([0, x.shape[0] + 4096], device=x.device)
                x = x + x[bad].sum()
            else:
                launch_oob(x.contiguous())
        return self.linear(x.flatten(1))


def make_model(fault: str, at_call: int) -> torch.nn.Module:
    """The entrypoint cuda-fault.yaml names."""
    return FaultyLinear(fault, at_call)
