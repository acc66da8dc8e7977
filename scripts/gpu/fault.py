"""Planted CUDA faults in torch programs, so each GPU diagnostic's real output can be recorded.

`python3 fault.py MODE`, MODE one of:
  assert    x[idx] with idx out of range on a CUDA tensor: torch's device-side assert
  triton    a Triton kernel (as inductor would make) storing 4 TiB past a torch tensor:
            a real illegal memory access in the forward pass
  backward  the same kernel launched by an autograd.Function's backward: the illegal memory
            access of issue 31's incident, raised wherever the next sync happens to be
  uninit    torch.empty on the GPU, summed before it is written (initcheck)
  ok        a small correct CUDA program (matmul, softmax, backward): the no-error baseline

Each mode prints `fault: <mode> launching` before the fault and `fault: <mode> survived` if no
error was raised, so a recorded output says how far the program got.
"""

from __future__ import annotations

import sys
import time

import torch

FAR = 1 << 40  # elements past the tensor: far outside anything the allocator mapped


def _say(text: str) -> None:
    print(f"fault: {text}", flush=True)


try:  # Triton's JIT reads a kernel's globals, so the kernel is defined at module level
    import triton
    import triton.language as tl
except ImportError:  # a machine without Triton can still run the other modes
    triton = None


if triton is not None:

    @triton.jit
    def oob_store(ptr, n, offset, BLOCK: tl.constexpr):  # noqa: ANN001, ANN201
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        value = tl.load(ptr + i, mask=i < n)
        tl.store(ptr + i + offset, value * 2, mask=i < n)


def launch_oob(t: torch.Tensor) -> None:
    """Store every element of `t` FAR elements past it (a Triton kernel, as inductor makes)."""
    n = t.numel()
    oob_store[((n + 127) // 128,)](t, n, FAR, BLOCK=128)


class BadBackward(torch.autograd.Function):
    """Doubles in the forward; the backward writes far out of bounds before returning."""

    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:  # noqa: ARG004
        return x * 2

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:  # noqa: ARG004
        grad = grad.contiguous().clone()
        launch_oob(grad)
        return grad * 2


def main(mode: str) -> int:
    started = time.monotonic()
    device = torch.device("cuda")
    x = torch.arange(1024, dtype=torch.float32, device=device)
    torch.cuda.synchronize()
    name = torch.cuda.get_device_name()
    _say(f"{mode} CUDA ready after {time.monotonic() - started:.2f}s on {name}")
    _say(f"{mode} launching")
    if mode == "assert":
        idx = torch.tensor([0, 5, 4096], device=device)
        y = x[idx]
        torch.cuda.synchronize()
        _say(f"{mode} survived: {y.tolist()}")
    elif mode == "triton":
        launch_oob(x)
        torch.cuda.synchronize()
        _say(f"{mode} survived")
    elif mode == "backward":
        w = torch.randn(1024, device=device, requires_grad=True)
        loss = (BadBackward.apply(w * x) ** 2).sum()
        loss.backward()
        _say(f"{mode} backward returned")
        print(float(w.grad.sum()), flush=True)  # the first sync after the backward
        _say(f"{mode} survived")
    elif mode == "uninit":
        junk = torch.empty(1 << 20, device=device)
        print(float(junk.sum()), flush=True)
        _say(f"{mode} survived")
    elif mode == "ok":
        a = torch.randn(256, 256, device=device, requires_grad=True)
        loss = torch.softmax(a @ a.T, dim=-1).sum()
        loss.backward()
        print(float(a.grad.abs().sum()), flush=True)
        _say(f"{mode} survived")
    else:
        print(f"fault: unknown mode {mode!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "ok"))
