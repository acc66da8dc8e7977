"""A torch core read with libtorch's frames named by the symbol index (symindex.py): the same
threads and frames as eu-stack's own lookups, and the index kept in the cache for the next."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from reprospec import native
from reprospec.native import eustack, readers, symindex

pytestmark = [
    pytest.mark.skipif(
        native.eustack_path() is None or readers.eu_addr2line_path() is None,
        reason="eu-stack and eu-addr2line needed (apt-get install elfutils)",
    ),
    pytest.mark.skipif(
        native.core_pattern().piped, reason="kernel.core_pattern pipes cores to a handler"
    ),
]

# Two threads, the crash in a torch op (libtorch_cpu's frames under the fault), and a
# second thread asleep in libc: both are named.
CRASH = """
import ctypes, threading, time, torch
torch.set_num_threads(1)
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
floats = (ctypes.c_float * (1 << 20)).from_address(4096)
torch.frombuffer(floats, dtype=torch.float32).sum()
"""


@pytest.fixture(scope="module")
def torch_core(tmp_path_factory: pytest.TempPathFactory) -> native.CoreInfo:
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("torch-core")

    def allow() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)

    subprocess.run(
        [sys.executable, "-c", CRASH], cwd=folder, preexec_fn=allow, capture_output=True,
        check=False, timeout=120,
    )  # fmt: skip
    cores = list(folder.glob("core*"))
    info = native.read_core(cores[0]) if cores else None
    assert info is not None, "no core of the torch crash (kernel.core_pattern?)"
    return info


def test_a_torch_core_has_eu_stacks_frames_with_libtorch_named_by_the_index(
    torch_core: native.CoreInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    big = [path for path in {p for _, _, p in torch_core.files} if symindex.indexed(path)]
    assert any(path.endswith("libtorch_cpu.so") for path in big)
    tool = native.eustack_path()
    assert tool is not None
    argv = eustack.core_eustack_argv(torch_core, str(torch_core.path), eustack=tool)
    whole = eustack.parse_eustack(eustack._run(argv, 120).stdout, torch_core.files)
    kept = tmp_path / "cache" / "reprospec" / "symbols"
    # The index and the other libraries' names (framenames.py) built, then read back from
    # the cache: the second read names every frame from them, as eu-stack does.
    for _ in range(2):
        run = eustack._core_run(torch_core, tool, 120)
        assert eustack.parse_eustack(run.stdout, torch_core.files) == whole
        assert list(kept.glob("*.idx"))
        names = {path.name.split(".")[0]: path for path in kept.glob("*.names")}
        (libc,) = {p for _, _, p in torch_core.files if Path(p).name == "libc.so.6"}
        facts = symindex.elf_facts(libc)
        assert facts is not None
        assert facts.build_id in names, names  # libc's start frames, under every main thread
    assert len(whole) == 2
    process = eustack.core_eustack_stacks(torch_core, run, python="", timeout_s=120)
    signature = native.signature_frame(native.NativeStacks((process,)))
    assert signature == "at::native::(anonymous namespace)::vectorized_inner_sum@libtorch_cpu"
