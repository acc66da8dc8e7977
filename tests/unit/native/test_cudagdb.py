"""cuda-gdb's command line on an attempt's core (running it needs a GPU core: the H200's
output is read in tests/unit/outcome/test_gpu_diagnostics.py)."""

from __future__ import annotations

from pathlib import Path

from reprospec.native import cudagdb


def test_argv_opens_the_core_before_asking_about_it(tmp_path: Path) -> None:
    core = tmp_path / "cuda-core.1807.vm.nvcudmp"
    argv = cudagdb.argv("/usr/local/cuda/bin/cuda-gdb", core)
    commands = argv[4::2]
    assert argv[:3] == ["/usr/local/cuda/bin/cuda-gdb", "-batch", "-nx"]
    assert set(argv[3::2]) == {"-ex"}
    assert commands.index(f"target cudacore {core}") < commands.index("info cuda kernels")
    assert commands[:3] == ["set pagination off", "set confirm off", "set width 0"]


def test_no_core_no_cuda_gdb(tmp_path: Path) -> None:
    assert cudagdb.read_core(tmp_path) is None
    assert not (tmp_path / "cuda-gdb.out").exists()
    (tmp_path / "cuda-core.9.host.nvcudmp").write_bytes(b"")
    (tmp_path / "cuda-core.10.host.nvcudmp").write_bytes(b"")
    assert cudagdb.first_core(tmp_path) == tmp_path / "cuda-core.10.host.nvcudmp"
