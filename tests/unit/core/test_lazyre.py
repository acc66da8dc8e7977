"""A Lazy pattern is compiled at its first match, never at import, and matches as re does."""

from __future__ import annotations

import re

import pytest

from reprospec.core.lazyre import Lazy


def test_compiled_at_the_first_match_then_kept() -> None:
    pattern = Lazy(r"(?P<word>\w+)=(?P<value>\d+)", re.M)
    assert pattern._compiled is None  # nothing compiled by defining it
    assert pattern.pattern == r"(?P<word>\w+)=(?P<value>\d+)"
    found = pattern.search("x a=1\nb=2")
    assert found is not None
    assert found["word"] == "a"
    compiled = pattern._compiled
    assert isinstance(compiled, re.Pattern)
    assert compiled.flags & re.M
    pattern.match("c=3")
    assert pattern._compiled is compiled


@pytest.mark.parametrize("text", ["", "a=1", "a=1 bb=22 c=x", "a=1\nb=2\n"])
def test_every_method_answers_as_re_does(text: str) -> None:
    source = r"(\w+)=(\d+)"
    lazy, eager = Lazy(source, re.M), re.compile(source, re.M)

    def spans(found: re.Match[str] | None) -> tuple[int, int] | None:
        return found.span() if found is not None else None

    assert spans(lazy.search(text)) == spans(eager.search(text))
    assert spans(lazy.match(text)) == spans(eager.match(text))
    assert spans(lazy.fullmatch(text)) == spans(eager.fullmatch(text))
    assert [m.span() for m in lazy.finditer(text, 1)] == [m.span() for m in eager.finditer(text, 1)]
    assert lazy.sub(r"\2=\1", text) == eager.sub(r"\2=\1", text)
    assert lazy.sub(lambda m: m[1].upper(), text, 1) == eager.sub(lambda m: m[1].upper(), text, 1)
    assert lazy.split(text) == eager.split(text)


def test_a_bad_pattern_fails_at_its_first_use() -> None:
    # Compiled late, so a typo would surface at the first match: every module-level Lazy is
    # compiled here once, and each must compile.
    import importlib
    from pathlib import Path

    import reprospec

    package = Path(reprospec.__file__).parent
    found = 0
    for path in sorted(package.rglob("*.py")):
        if " = Lazy(" not in path.read_text("utf-8"):
            continue
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        module = importlib.import_module(name.removesuffix(".__init__"))
        for value in vars(module).values():
            if isinstance(value, Lazy):
                assert isinstance(value.compiled, re.Pattern), name
                found += 1
    assert found >= 40
    with pytest.raises(re.error):
        Lazy("(unclosed").search("x")
