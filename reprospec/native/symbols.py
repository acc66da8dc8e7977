"""Short, stable names of native frames: `strlen@libc`, not `__strlen_evex (libc.so.6)`.

A failure signature must read the same on two machines: library versions and
hashes, glibc's internal prefixes and CPU-variant copies, C++ parameter lists and
template arguments are dropped.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_LIBC_LIKE = re.compile(r"^(libc|libm|libpthread|libdl|librt|ld-linux[-\w]*)$")
# glibc runs one of several CPU-specific copies (ifuncs): `__strlen_evex`, `__memmove_avx_...`.
_VARIANTS = frozenset(
    {"avx", "avx2", "avx512", "avx512f", "avx512bw", "avx512vl", "evex", "evex256", "evex512",
     "sse2", "sse4", "sse42", "ssse3", "erms", "unaligned", "aligned", "rtm", "generic"}
)  # fmt: skip


def short_library(name: str | None) -> str | None:
    """`libc.so.6` -> `libc`, `libgomp-a34b3233.so.1` -> `libgomp`: stable across versions.

    A library whose file was removed after it was loaded (an extension built into a
    temporary folder, a package upgraded during the run) is named by the kernel's mapping
    `libfoo.so (deleted)`: the same library, `libfoo` (it was `libfoo.so (deleted)`, a
    signature of its own, never agreeing with the same crash's `f@libfoo`)."""
    if not name:
        return None
    name = re.sub(r"\.so(\.[\w.]+)?$", "", PurePosixPath(name.removesuffix(" (deleted)")).name)
    name = re.sub(r"\.cpython-\d+[-\w]*$", "", name)
    return re.sub(r"-[0-9a-f]{8}$", "", name)


def short_symbol(function: str, library: str | None = None) -> str:
    """A function's short name: C++ without parameters, template arguments and return type;
    in the C library without glibc's internal prefixes and CPU-variant suffixes."""
    name = re.sub(r"\s*\[clone [^\]]*\]$", "", function.strip())
    name = re.sub(r"\s+(const|volatile|&&|&)$", "", name)
    templated = "<" in name
    name = _simplify_cpp(name)
    if templated:
        # Only a function template's demangled name starts with its return type.
        name = re.sub(r"^(?:[\w:]+[\s*&]+)+(?=[\w(~])", "", name)
    lib = short_library(library)
    if lib is not None and _LIBC_LIKE.match(lib) and "::" not in name:
        name = libc_name(name)
    return name


def libc_name(name: str) -> str:
    """A C library function's name as glibc's own API names it: without its internal
    prefixes (`__GI___clock_nanosleep`, `__libc_nanosleep`, `___pthread_mutex_lock`) and
    CPU-variant suffixes (`__memcpy_avx_unaligned_erms` is `memcpy`)."""
    name = name.removeprefix("__GI_").removeprefix("__libc_").lstrip("_") or name
    tokens = name.split("_")
    for index, token in enumerate(tokens):
        if index > 0 and token in _VARIANTS:
            return "_".join(tokens[:index])
    return name


def _matching(text: str, start: int, opening: str, closing: str) -> int | None:
    depth = 0
    for index in range(start, len(text)):
        if text[index] == opening:
            depth += 1
        elif text[index] == closing:
            depth -= 1
            if depth == 0:
                return index
    return None


def _simplify_cpp(name: str) -> str:
    """Drop template arguments and parameter lists: `ns::f<int>(a, b)::{lambda(int)#1}::operator()`
    -> `ns::f::{lambda#1}::operator()`; `(anonymous namespace)` stays."""
    out = ""
    index = 0
    while index < len(name):
        char = name[index]
        end: int | None = None
        if char == "<" and out and not re.search(r"operator\s*<?$", out):
            end = _matching(name, index, "<", ">")
        elif (
            char == "("
            and out
            and (
                out[-1].isalnum()
                or out[-1] in "_>]"
                or re.search(r"operator(?:\(\)|[^\w\s(]+)$", out)
            )
            and not out.endswith("operator")
        ):
            end = _matching(name, index, "(", ")")
        if end is None:
            out += char
            index += 1
        else:
            index = end + 1
    return out.strip() or name
