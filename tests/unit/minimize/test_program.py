"""How a minimize candidate's size is counted: the original's and a candidate's alike."""

from __future__ import annotations

import ast
from pathlib import Path

from reprospec.core.results import Rate
from reprospec.isolation.candidates import Tally
from reprospec.minimize.program import Program, as_written, left_out
from reprospec.minimize.report import _layout_note, sizes
from reprospec.minimize.search import MinimizeResult
from reprospec.minimize.source import apply, loops_kept, numbered
from tests.support.deep import too_deep

# A user's DataLoader script, in its own layout: no blank line between methods, a comment.
TRAIN = """import argparse
import ctypes
import torch
from torch.utils.data import DataLoader, Dataset

class Decoded(Dataset):
    def __init__(self, decoder):
        self.decoder = decoder
    def __len__(self):
        return 64
    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        if self.decoder == "native" and info is not None and i == 37:
            ctypes.string_at(0)  # native decoder is not fork-safe
        return torch.full((4,), float(i)), i % 2

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--decoder", default="pil")
    a = p.parse_args()
    dl = DataLoader(Decoded(a.decoder), batch_size=4, num_workers=a.workers)
    for step, (x, y) in enumerate(dl, 1):
        print(f"train step {step}", flush=True)
    print("ok")

if __name__ == "__main__":
    main()
"""


def _program(text: str) -> Program:
    return Program(("python", "train.py"), (), files=(("train.py", text),))


def test_a_candidate_one_statement_smaller_counts_fewer_lines_of_file() -> None:
    # minimize.md read "lines of the files 28 -> 29" of this script cut by a statement:
    # the candidate is written by ast.unparse, whose blank line before each method the
    # original's own layout did not have.
    nodes = numbered(ast.parse(TRAIN))
    index = next(
        i
        for i, node in enumerate(nodes)
        if isinstance(node, ast.Expr) and ast.unparse(node) == "print('ok')"
    )
    cut = apply(TRAIN, delete={index})
    assert cut is not None
    assert "print('ok')" not in cut
    original, candidate = _program(TRAIN), _program(cut)
    assert candidate.file_lines == original.file_lines - 1
    assert candidate.lines == original.lines - 1
    # In its own layout the original is 28 lines of file, 25 of code; the written candidate
    # has 29 lines of file: the counts compare only in one layout.
    assert original.given_lines == (25, 28)
    assert len(cut.splitlines()) == 29


def test_a_statement_over_several_lines_is_one_line_as_written() -> None:
    # A five-line literal is one line once unparsed: counted raw, a candidate that only
    # rewrote it would seem four lines smaller.
    text = "CONFIG = {\n    'a': 1,\n    'b': 2,\n}\nprint(CONFIG)\n"
    program = _program(text)
    assert (program.lines, program.file_lines) == (2, 2)
    assert program.given_lines == (5, 5)
    # A file that does not parse is counted as it is.
    broken = _program("def f(:\n    pass\n")
    assert (broken.lines, broken.file_lines) == broken.given_lines == (2, 2)


def _result(original: Program, program: Program) -> MinimizeResult:
    rate = Rate(5, 5, 0.57, 1.0)
    return MinimizeResult(
        "minimized", "", original, program, 10, 1, 1, rate, rate, 0.9, 0.1, 0.3, Tally()
    )


def test_the_report_counts_each_file_in_the_layout_dir_holds_it_in() -> None:
    # A file minimize changed is unparsed: its original is counted unparsed too. One it
    # left whole is DIR's as the original's text: counted unparsed, it read 30 lines of
    # file where DIR's train.py has 28.
    original = _program(TRAIN)
    cut = _program(TRAIN.replace('    print("ok")\n', ""))
    cut = _program(as_written(cut.source("train.py")))
    changed = _result(original, cut)
    assert (sizes(changed).lines, sizes(changed).file_lines) == ((25, 24), (30, 29))
    (note,) = _layout_note(changed)
    assert "as it is, the original has 25 lines of Python in 28 lines of file" in note
    whole = _result(original, original)
    assert (sizes(whole).lines, sizes(whole).file_lines) == ((25, 25), (28, 28))
    assert _layout_note(whole) == []
    assert _layout_note(_result(_program("x = 1\nprint(x)\n"), _program("print(1)\n"))) == []


def test_a_file_nested_deeper_than_python_reads_is_counted_as_no_python() -> None:
    """Minimize of a program whose file Python's parser refuses for its depth (as
    Python itself does when it runs it) stopped on the engine's RecursionError."""
    from reprospec.minimize.program import ast_nodes

    assert ast_nodes(too_deep()) == 0
    assert ast_nodes("x = 1 + 1\n") == 7  # Assign, Name, Store, BinOp, 1, Add, 1


def test_a_results_store_is_left_out_whatever_its_name_and_a_programs_own_database_kept(
    tmp_path: Path,
) -> None:
    store = tmp_path / "rs2"
    (store / "runs").mkdir(parents=True)
    (store / "results.db").write_bytes(b"")
    data = tmp_path / "data"  # the program's own sqlite file of that name: no runs folder
    data.mkdir()
    (data / "results.db").write_bytes(b"")
    assert left_out(store)
    assert not left_out(data)
    assert left_out(tmp_path / ".git")
    assert not left_out(tmp_path / "src")


def test_loops_kept_are_in_the_order_written_and_a_too_deep_file_is_skipped() -> None:
    text = "def f(ws):\n    for w in ws:\n        w.join()\n\n\nfor t in threads:\n    t.start()\n"
    program = Program(("python",), (), files=(("a.py", text), ("deep.py", too_deep())))
    assert loops_kept(program) == ("for w in ws", "for t in threads")
