"""The symbol index's choice among symbols (libdwfl's rules), and the pieces of the split core
read put back as eu-stack prints them: recorded from a real torch core's outputs."""

from __future__ import annotations

from reprospec.native import eustack
from reprospec.native.symindex import Candidate, choose

GLOBAL, WEAK, LOCAL = 1, 2, 0


def _sym(index: int, name: int, binding: int, value: int, size: int) -> Candidate:
    return Candidate(index, name, binding, value, size)


def test_the_closest_sized_symbol_that_holds_the_address_is_chosen() -> None:
    window = [_sym(10, 1, GLOBAL, 0x100, 0x50), _sym(11, 2, GLOBAL, 0x180, 0x10)]
    assert choose(window, 0x120, first_global=5) == 1  # 0x180 is above the address
    assert choose(window, 0x185, first_global=5) == 2


def test_a_global_alias_wins_over_a_weak_one_and_a_sized_one_over_a_label() -> None:
    aliases = [_sym(10, 1, WEAK, 0x100, 0x50), _sym(11, 2, GLOBAL, 0x100, 0x50)]
    assert choose(aliases, 0x110, first_global=5) == 2
    labelled = [_sym(10, 1, GLOBAL, 0x100, 0), _sym(11, 2, GLOBAL, 0x100, 0x50)]
    assert choose(labelled, 0x110, first_global=5) == 2


def test_locals_are_read_only_when_no_global_holds_the_address() -> None:
    window = [_sym(2, 7, LOCAL, 0x100, 0x50), _sym(10, 1, GLOBAL, 0x80, 0x10)]
    assert choose(window, 0x110, first_global=5) == 7  # a static function
    held = [_sym(2, 7, LOCAL, 0x100, 0x50), _sym(10, 1, GLOBAL, 0x0F0, 0x40)]
    assert choose(held, 0x110, first_global=5) == 1  # libdwfl never looks at the local


def test_a_label_is_the_fallback_only_above_every_sized_symbol() -> None:
    assert choose([_sym(10, 3, GLOBAL, 0x200, 0)], 0x210, first_global=5) == 3
    below = [_sym(10, 3, GLOBAL, 0x200, 0), _sym(11, 4, GLOBAL, 0x1F0, 0x30)]
    assert choose(below, 0x230, first_global=5) is None  # inside the sized one's range
    assert choose([], 0x230, first_global=5) is None


QUIET = """PID 24780 - core
TID 24780:
#0  0x00007f4959ca8eec - libc.so.6
    [93ac61ec5a8eb1396f9fbd350e3169a558528a40]@0x7f4959c1e000+0x8aeec
#1  0x00007f4949ae4b70 - libtorch_cpu.so
    [b7066ed94f422786bd205cd2743c2722b5f366fd]@0x7f4942e00000+0x6ce4b70
#2  0x00007f4959f58ba3 - libpython3.11.so.1.0
    [49daf84ed369fe589b73ea876f2591cd4c3588bb]@0x7f4959e00000+0x158ba2
#3  0x0000000000001234
"""

ADDR2LINE = """0x00007f4959ca8eec
__pthread_kill_implementation
./nptl/pthread_kill.c:44:76
0x00007f4959f58ba2
_PyObject_VectorcallTstate inlined at Objects/call.c:299:12 in PyObject_Vectorcall
./Include/internal/pycore_call.h:92:11
PyObject_Vectorcall
Objects/call.c:299:12
0x00007f4959c5a050
__restore_rt
??:0
"""


def test_eu_stack_quiet_frames_give_the_address_each_name_is_looked_up_at() -> None:
    ((header, frames),) = eustack._unwound(QUIET)
    assert header == "TID 24780:"
    assert [(f.module, f.offset) for f in frames] == [
        ("libc.so.6", 0x8AEEC),
        ("libtorch_cpu.so", 0x6CE4B70),
        ("libpython3.11.so.1.0", 0x158BA2),
        (None, None),
    ]
    assert frames[2].at == 0x7F4959F58BA2  # a return address: moved back into its call
    assert frames[1].build_id == "b7066ed94f422786bd205cd2743c2722b5f366fd"  # checked on disk


def test_eu_addr2line_entries_are_the_inlined_function_then_its_caller() -> None:
    entries = eustack._addr2line_entries(ADDR2LINE)
    assert entries[0x7F4959CA8EEC] == [
        ("__pthread_kill_implementation", "./nptl/pthread_kill.c:44:76")
    ]
    assert entries[0x7F4959F58BA2] == [
        ("_PyObject_VectorcallTstate", "./Include/internal/pycore_call.h:92:11"),
        ("PyObject_Vectorcall", "Objects/call.c:299:12"),
    ]
    assert entries[0x7F4959C5A050] == [("__restore_rt", None)]
