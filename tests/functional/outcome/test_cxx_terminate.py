"""A C++ program's uncaught exception, from a real g++ build: std::terminate prints its type
and `what()` before its abort, and the crash by SIGABRT carries them however the abort was
seen (the program's own signal, a shell script's exit status 134, a child's death), and a
ticket that pastes those words with no signal line reads the same crash. No reader took
them: every one read `crash SIGABRT` with no exception, and `expect.exception:
std::runtime_error` was refused as no class's name (outcome/cxxterminate.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reprospec.spec.load import load_spec
from tests.support.cli import Cli

_SOURCE = """
#include <stdexcept>
int main() { throw std::runtime_error("bad shape 3 != 4"); }
"""

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")


def _build(work: Path, name: str = "solver", source: str = _SOURCE) -> None:
    """`work/name`, built by g++ from `source`."""
    work.mkdir(parents=True, exist_ok=True)
    (work / f"{name}.cpp").write_text(source)
    subprocess.run(["g++", "-O0", "-o", str(work / name), str(work / f"{name}.cpp")], check=True)


def _from_ticket(cli: Cli, tmp_path: Path, paste: str) -> None:
    """`capture --from-log ticket.md -o t.yaml` of a ticket holding `paste`; it succeeded."""
    (tmp_path / "ticket.md").write_text(paste)
    made = cli("capture", "--from-log", "ticket.md", "-o", "t.yaml", cwd=tmp_path)
    assert made.code == 0, made.stdout + made.stderr


def _ran_ticket(cli: Cli, tmp_path: Path) -> dict[str, Any]:
    """The one cell of `run t.yaml` in tmp_path/work, which succeeded."""
    ran = cli("run", "t.yaml", "--set", "environment.workdir=work", cwd=tmp_path)
    assert ran.code == 0, ran.stdout + ran.stderr
    cell: dict[str, Any]
    (cell,) = ran.results()["cells"]
    return cell


def test_an_uncaught_cxx_exception_is_the_crashs_however_its_abort_is_seen(
    cli: Cli, tmp_path: Path
) -> None:
    _build(tmp_path)
    # The script's program aborts, the script says so and exits with its status (134).
    (tmp_path / "run.sh").write_text(
        '#!/bin/sh\n./solver\nstatus=$?\necho "solver exited $status" >&2\nexit $status\n'
    )
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "parent.py").write_text(
        "import subprocess, sys\nsys.exit(3 if subprocess.call(['./solver']) else 0)\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: cxx\nmatrix:\n  how: ['./solver', './run.sh', 'python3 parent.py']\n"
        "command: ${{ matrix.how }}\nrun: {timeout: 30s}\n"
        "expect:\n  outcome: crash\n  signal: SIGABRT\n  exception: std::runtime_error\n"
        "  message: 'bad shape'\n"
        "  cases:\n    - {when: {how: 'python3 parent.py'}, where: child}\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    said = {
        cell["id"]: tuple(
            cell["attempts"][0]["outcome"][key]
            for key in ("kind", "signal", "where", "exception", "message")
        )
        for cell in result.results()["cells"]
    }
    thrown = ("std::runtime_error", "bad shape 3 != 4")
    assert said == {
        "how=./solver": ("crash", "SIGABRT", "main", *thrown),
        "how=./run.sh": ("crash", "SIGABRT", "main", *thrown),
        "how=python3 parent.py": ("crash", "SIGABRT", "child", *thrown),
    }, said


def test_a_ticket_of_the_terminate_words_alone_reads_the_crash_a_live_run_meets(
    cli: Cli, tmp_path: Path
) -> None:
    """The paste holds the command and std::terminate's words, no `Aborted` line: it was
    "no failure found". It is a crash by SIGABRT with C++'s exception, which the program's
    run here meets."""
    work = tmp_path / "work"
    _build(work)
    printed = subprocess.run(["./solver"], cwd=work, capture_output=True, text=True).stderr
    _from_ticket(cli, tmp_path, f"Our solver dies:\n\n    $ ./solver\n{printed}\n")
    document = load_spec(str(tmp_path / "t.yaml")).document
    assert document["expect"] == {
        "outcome": "crash",
        "signal": "SIGABRT",
        "exception": "std::runtime_error",
    }, document["expect"]
    cell = _ran_ticket(cli, tmp_path)
    assert cell["verdict"] == "reproduced", cell


_TYPES = """
#include <cstring>
#include <stdexcept>
namespace boost {
struct bad_lexical_cast : std::bad_cast {
  const char* what() const noexcept override { return "bad lexical cast"; }
};
template <class E> struct wrapexcept : E {};
}
int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "text")) throw "no config";
  throw boost::wrapexcept<boost::bad_lexical_cast>();
}
"""


@pytest.mark.parametrize(
    ("argument", "thrown"),
    [("", "boost::wrapexcept<boost::bad_lexical_cast>"), ("text", "char const*")],
)
def test_a_ticket_of_a_cxx_type_no_python_class_spells_writes_a_valid_spec(
    cli: Cli, tmp_path: Path, argument: str, thrown: str
) -> None:
    """std::terminate names a template's type and a `throw "text"`'s (`char const*`) as C++
    spells them; capture wrote them as `exception`, and `validate` refused its own spec
    ("names no exception class"). They are valid, and a run judges them as written."""
    work = tmp_path / "work"
    _build(work, "types", _TYPES)
    command = f"./types {argument}".strip()
    printed = subprocess.run(command.split(), cwd=work, capture_output=True, text=True).stderr
    assert f"instance of '{thrown}'" in printed, printed
    _from_ticket(cli, tmp_path, f"It dies:\n\n    $ {command}\n{printed}\n")
    expect = load_spec(str(tmp_path / "t.yaml")).document["expect"]
    assert isinstance(expect, dict), expect
    assert expect["exception"] == thrown, expect
    checked = cli("validate", "t.yaml", cwd=tmp_path)
    assert "names no exception class" not in checked.stdout + checked.stderr, checked.stderr
    cell = _ran_ticket(cli, tmp_path)
    assert cell["attempts"][0]["outcome"]["exception"] == thrown, cell
    assert cell["verdict"] == "reproduced", cell


_RETRIES = """
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "own")) throw std::bad_alloc();
  int alive = 0;
  pid_t worker = fork();
  if (worker == 0) throw std::bad_alloc();  // the worker's, its parent goes on
  waitpid(worker, nullptr, 0);
  std::fprintf(stderr, "worker 3 died, retrying\\n");
  if (argc > 1 && !std::strcmp(argv[1], "musl")) {
    // musl's assert() (an Alpine image's; no musl here): its __assert_fail's words, abort().
    std::fprintf(stderr, "Assertion failed: alive > 0 (retries.cpp: main: 17)\\n");
    std::abort();
  }
  assert(alive > 0);
}
"""


def test_a_terminate_another_abort_follows_is_not_the_crashs_exception(
    cli: Cli, tmp_path: Path
) -> None:
    """A worker's uncaught std::bad_alloc, which its parent outlives, then the parent's own
    abort (a failed assert()): the crash by SIGABRT took the worker's exception, the last
    terminate anywhere on stderr, and under environment.memory was said to be the memory
    limit's. The abort the process died of is the assert's (glibc's, or musl's words); a
    terminate that is the last abort reported is still the crash's, and the limit's."""
    _build(tmp_path, "retries", _RETRIES)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "reprospec: 1\nname: retries\nenvironment: {memory: 200m}\n"
        "matrix:\n  which: [worker, own, musl]\n"
        "command: ./retries ${{ matrix.which }}\nrun: {timeout: 30s}\n"
        "expect:\n  outcome: crash\n  signal: SIGABRT\n"
    )
    result = cli("run", str(spec))
    assert result.code == 0, result.stdout + result.stderr
    attempts = {cell["id"]: cell["attempts"][0] for cell in result.results()["cells"]}
    worker, own = attempts["which=worker"], attempts["which=own"]
    assert worker["outcome"]["exception"] is None, worker["outcome"]
    assert not any("memory limit" in said for said in worker["warnings"]), worker["warnings"]
    musl = attempts["which=musl"]
    assert musl["outcome"]["signal"] == "SIGABRT", musl["outcome"]
    assert musl["outcome"]["exception"] is None, musl["outcome"]
    assert not any("memory limit" in said for said in musl["warnings"]), musl["warnings"]
    assert own["outcome"]["exception"] == "std::bad_alloc", own["outcome"]
    assert any("memory limit" in said for said in own["warnings"]), own["warnings"]


_POINTER = "struct Fault {};\nint main() { throw new Fault(); }\n"


def test_a_type_no_spec_can_name_is_said_not_expected_by_both_captures(
    cli: Cli, tmp_path: Path
) -> None:
    """A global class thrown by pointer: std::terminate names it `Fault*`, which
    expect.exception refuses (no spelling tells it from a mistyped `Cuda*`). Capture wrote it
    all the same: live, its own check of the spec it wrote refused it (exit 2); from a
    ticket, a spec `validate` refused. Both leave it out and quote it in a comment."""
    work = tmp_path / "work"
    _build(work, "fault", _POINTER)
    printed = subprocess.run(["./fault"], cwd=work, capture_output=True, text=True).stderr
    assert "instance of 'Fault*'" in printed, printed
    said = "  # std::terminate named Fault*, which expect.exception cannot spell\n"
    live = cli("capture", "-o", str(tmp_path / "live.yaml"), "--", "./fault", cwd=work)
    assert live.code == 0, live.stdout + live.stderr
    _from_ticket(cli, tmp_path, f"It dies:\n\n    $ ./fault\n{printed}\n")
    for name in ("live.yaml", "t.yaml"):
        text = (tmp_path / name).read_text()
        assert said in text, text
        expect = load_spec(str(tmp_path / name)).document["expect"]
        assert isinstance(expect, dict), expect
        assert (expect["outcome"], expect["signal"]) == ("crash", "SIGABRT"), expect
        assert "exception" not in expect, expect
        checked = cli("validate", name, cwd=tmp_path)
        assert "names no exception class" not in checked.stdout + checked.stderr, checked.stderr
    cell = _ran_ticket(cli, tmp_path)
    assert cell["verdict"] == "reproduced", cell


_TEMPLATES = """
#include <functional>
#include <stdexcept>
#include <vector>
template <class T> struct GErr : std::runtime_error { GErr() : std::runtime_error("g") {} };
int main(int argc, char**) {
  if (argc > 1) throw std::function<std::vector<int>(int)>();
  throw GErr<int>();
}
"""


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ((), "GErr<int>"),
        (("f",), "std::function<std::vector<int, std::allocator<int> > (int)>"),
    ],
)
def test_a_template_std_terminate_names_is_expected_by_capture(
    cli: Cli, tmp_path: Path, args: tuple[str, ...], named: str
) -> None:
    """A template of the global namespace (`GErr<int>`), and a function type whose return is
    a template (`... > (int)>`, the demangler's space before its `(`): std::terminate names
    them, and capture wrote them as it wrote any other type, until the spelling check
    refused both and capture left them out, quoted in a comment, as it leaves `Fault*`."""
    work = tmp_path / "work"
    _build(work, "tmpl", _TEMPLATES)
    printed = subprocess.run(["./tmpl", *args], cwd=work, capture_output=True, text=True).stderr
    assert f"instance of '{named}'" in printed, printed
    made = cli("capture", "-o", str(tmp_path / "s.yaml"), "--", "./tmpl", *args, cwd=work)
    assert made.code == 0, made.stdout + made.stderr
    text = (tmp_path / "s.yaml").read_text()
    assert "cannot spell" not in text, text
    expect = load_spec(str(tmp_path / "s.yaml")).document["expect"]
    assert isinstance(expect, dict), expect
    assert expect["exception"] == named, expect
