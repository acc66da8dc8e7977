"""A torch loader that dies of a real SIGSEGV (ctypes reads address 0) when it uses workers;
the rest is what a real script carries along: a model, a loss, printing."""

import ctypes
import sys

import torch


def model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


def collate(batch: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack(batch)


workers = int(sys.argv[1])
net = model()
data = collate([torch.ones(4) * i for i in range(8)])
loss = net(data).pow(2).mean()
print(f"loss {loss.item():.3f}", flush=True)
if workers > 0:
    ctypes.string_at(0)
print("done")
