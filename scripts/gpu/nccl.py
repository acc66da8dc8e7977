"""NCCL on one GPU, for recording NCCL_DEBUG output and the flight recorder's dumps (issue 31).

`python3 nccl.py MODE OUTDIR`, with the variables (NCCL_DEBUG, TORCH_NCCL_TRACE_BUFFER_SIZE, ...)
set by the caller, since torch reads them when the process group is made. MODE:
  collectives  world size 1: all_reduce, broadcast, all_gather, reduce_scatter, barrier; then
               every flight-recorder dump this torch has, raw (pickle) and as JSON, into OUTDIR
  hang         world size 1 with a 10 s timeout: a GPU spin (torch.cuda._sleep) ahead of an
               all_reduce keeps it from finishing, so the watchdog times it out and (with
               TORCH_NCCL_DUMP_ON_TIMEOUT=1) writes its dump to TORCH_NCCL_DEBUG_INFO_TEMP_FILE
  rank         one rank of a world of 2 on the same GPU (RANK from the environment, rendezvous
               through the file OUTDIR/store): NCCL refuses two ranks on one device
"""

from __future__ import annotations

import datetime
import json
import os
import pickle
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist


def _say(text: str) -> None:
    print(f"nccl: {text}", flush=True)


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def dump_flight_recorder(outdir: Path, tag: str) -> None:
    """Every dump function this build has, each to its own file: raw bytes, and JSON."""
    import torch._C._distributed_c10d as c10d

    names = [n for n in dir(c10d) if n.startswith("_dump") and "trace" in n]
    _say(f"dump functions: {names}")
    for name in names:
        try:
            raw = getattr(c10d, name)()
        except Exception as exc:
            _say(f"{name}() raised {type(exc).__name__}: {exc}")
            continue
        data = raw if isinstance(raw, bytes) else str(raw).encode()
        (outdir / f"{tag}{name}.raw").write_bytes(data)
        _say(f"{name}() gave {len(data)} bytes")
        if name.endswith("_json"):
            continue
        try:
            decoded = pickle.loads(data)
        except Exception as exc:
            _say(f"{name}: not a pickle: {type(exc).__name__}: {exc}")
            continue
        rendered = json.dumps(_jsonable(decoded), indent=1)
        (outdir / f"{tag}{name}.json").write_text(rendered)


def collectives(outdir: Path) -> None:
    store = dist.FileStore(str(outdir / "store-collectives"), 1)
    dist.init_process_group(
        "nccl", store=store, rank=0, world_size=1, device_id=torch.device("cuda", 0)
    )
    t = torch.ones(1 << 20, device="cuda")
    dist.all_reduce(t)
    dist.broadcast(t, src=0)
    gathered = [torch.empty_like(t)]
    dist.all_gather(gathered, t)
    out = torch.empty_like(t)
    dist.reduce_scatter(out, [t])
    dist.barrier()
    torch.cuda.synchronize()
    _say(f"collectives done, sum {float(t.sum())}")
    dump_flight_recorder(outdir, "fr_")
    dist.destroy_process_group()
    _say("destroyed")


def hang() -> None:
    store = dist.FileStore(os.environ["NCCL_STORE"], 1)
    dist.init_process_group(
        "nccl",
        store=store,
        rank=0,
        world_size=1,
        device_id=torch.device("cuda", 0),
        timeout=datetime.timedelta(seconds=10),
    )
    t = torch.ones(1 << 20, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    _say("first all_reduce done; spinning the GPU ahead of the second")
    torch.cuda._sleep(1 << 37)  # about a minute of GPU clock cycles on the current stream
    work = dist.all_reduce(t, async_op=True)
    started = time.monotonic()
    try:
        work.wait()
        torch.cuda.synchronize()
        _say(f"second all_reduce returned after {time.monotonic() - started:.1f}s")
    except Exception as exc:
        _say(f"wait raised after {time.monotonic() - started:.1f}s: {type(exc).__name__}: {exc}")
    time.sleep(30)  # the watchdog aborts the process; this is never reached then
    _say("still alive 30 s later")


def rank() -> None:
    me = int(os.environ["RANK"])
    store = dist.FileStore(os.environ["NCCL_STORE"], 2)
    dist.init_process_group(
        "nccl",
        store=store,
        rank=me,
        world_size=2,
        device_id=torch.device("cuda", 0),
        timeout=datetime.timedelta(seconds=20),
    )
    _say(f"rank {me} joined")
    t = torch.ones(4, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    _say(f"rank {me} all_reduce gave {t.tolist()}")
    dist.destroy_process_group()


def main() -> int:
    mode = sys.argv[1]
    outdir = Path(sys.argv[2])
    outdir.mkdir(parents=True, exist_ok=True)
    try:
        nccl = torch.cuda.nccl.version()
    except (AttributeError, RuntimeError) as exc:  # a torch without NCCL
        nccl = f"unknown ({exc})"
    _say(f"{mode}: torch {torch.__version__}, nccl {nccl}")
    if mode == "collectives":
        collectives(outdir)
    elif mode == "hang":
        hang()
    elif mode == "rank":
        rank()
    else:
        print(f"nccl: unknown mode {mode!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
