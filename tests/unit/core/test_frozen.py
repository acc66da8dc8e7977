"""`@frozen` behaves as `@dataclass(frozen=True)`: each test builds the same class both ways
and compares what they do."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import typing
from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from reprospec.core.frozen import frozen

Deco = Callable[[type[Any]], type[Any]]
BOTH: list[Deco] = [dataclass(frozen=True), frozen]


@frozen
class Pickled:
    """Pickled by its module and name (a class made in a test has none pickle can find)."""

    n: int
    tags: tuple[str, ...] = ()
    hidden: str = field(default="", compare=False)


def _point(deco: Deco) -> type[Any]:
    class Point:
        """A point."""

        x: int
        y: str = "y"
        tags: tuple[str, ...] = ()
        extra: tuple[int, ...] = field(default_factory=tuple)
        note: str = field(default="", compare=False, repr=False)
        LIMIT: ClassVar[int] = 3

    return deco(Point)


@pytest.mark.parametrize("deco", BOTH)
def test_init_defaults_and_factories(deco: Deco) -> None:
    point = _point(deco)
    a = point(1)
    assert (a.x, a.y, a.tags, a.extra, a.note) == (1, "y", (), (), "")
    c = point(2, "z", ("t",), (1,), "n")
    assert (c.x, c.y, c.tags, c.extra, c.note) == (2, "z", ("t",), (1,), "n")
    assert point(x=3, note="m").note == "m"
    with pytest.raises(TypeError):
        point()
    with pytest.raises(TypeError):
        point(1, "y", (), (), "", "one too many")
    assert point.LIMIT == 3
    assert point.__match_args__ == ("x", "y", "tags", "extra", "note")


def test_same_as_dataclass() -> None:
    made = [_point(deco) for deco in BOTH]
    for args in [(1,), (2, "z", ("t",)), (3, "w", (), (), "hidden")]:
        plain, ours = (cls(*args) for cls in made)
        assert repr(ours) == repr(plain).replace(type(plain).__qualname__, type(ours).__qualname__)
        assert "hidden" not in repr(ours)
        assert dataclasses.asdict(ours) == dataclasses.asdict(plain)
        assert [f.name for f in dataclasses.fields(ours)] == [
            f.name for f in dataclasses.fields(plain)
        ]
    hashable = [cls(4, "a", ("b",)) for cls in made]
    assert hash(hashable[0]) == hash(hashable[1])


@pytest.mark.parametrize("deco", BOTH)
def test_equality_and_hash_leave_out_compare_false(deco: Deco) -> None:
    point = _point(deco)
    assert point(1, note="a") == point(1, note="b")
    assert hash(point(1, note="a")) == hash(point(1, note="b"))
    assert point(1) != point(2)
    assert point(1).__eq__(object()) is NotImplemented
    assert len({point(1), point(1), point(2)}) == 2
    with pytest.raises(TypeError, match="unhashable"):
        hash(point(1, tags=["a"]))


@pytest.mark.parametrize("deco", BOTH)
def test_assignment_and_deletion_refused(deco: Deco) -> None:
    value = _point(deco)(1)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'x'"):
        value.x = 2
    with pytest.raises(FrozenInstanceError, match="cannot delete field 'y'"):
        del value.y
    with pytest.raises(FrozenInstanceError):
        value.other = 1


@pytest.mark.parametrize("deco", BOTH)
def test_replace_pickle_and_post_init(deco: Deco) -> None:
    seen: list[int] = []

    class Checked:
        """Checked at every construction, replace's too."""

        n: int
        label: str = ""

        def __post_init__(self) -> None:
            seen.append(self.n)
            if self.n < 0:
                raise ValueError("negative")
            object.__setattr__(self, "label", self.label or f"n={self.n}")

    checked = deco(Checked)
    value = checked(1)
    assert value.label == "n=1"
    assert dataclasses.replace(value, n=2).n == 2
    with pytest.raises(ValueError, match="negative"):
        dataclasses.replace(value, n=-1)
    assert seen == [1, 2, -1]
    original = Pickled(5, ("q",), "s")
    assert pickle.loads(pickle.dumps(original)) == original
    assert pickle.loads(pickle.dumps(original)).hidden == "s"


@pytest.mark.parametrize("deco", BOTH)
def test_subclass_and_own_methods(deco: Deco) -> None:
    class Base:
        """A base."""

        a: int

        def __repr__(self) -> str:
            return f"<{self.a}>"

    base = deco(Base)

    class Child(base):  # type: ignore[misc,valid-type]
        """Its fields after the base's."""

        b: str = "b"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Child) and self.a == other.a

    child = deco(Child)
    assert child(1).b == "b"
    assert repr(base(1)) == "<1>"  # its own repr kept
    assert repr(child(1, "c")).endswith("Child(a=1, b='c')")  # a subclass gets its own
    assert child(1, "c") == child(1, "d")  # its own equality kept
    # A class that writes __eq__ alone still gets a hash of its fields, as dataclass's does.
    assert hash(child(1, "c")) == hash((1, "c"))
    assert [f.name for f in dataclasses.fields(child)] == ["a", "b"]


@pytest.mark.parametrize("deco", BOTH)
def test_fields_named_like_the_init_s_own_names(deco: Deco) -> None:
    class Odd:
        self: int
        _set: str = "s"
        _FACTORY: tuple[int, ...] = field(default_factory=tuple)

    odd = deco(Odd)(1, "t")
    assert (odd.self, odd._set, odd._FACTORY) == (1, "t", ())


def test_docstring_written_when_missing() -> None:
    class Bare:
        a: int
        b: str = "x"

    assert frozen(Bare).__doc__ == "Bare(a: 'int', b: 'str' = 'x')"
    assert _point(frozen).__doc__ == "A point."


@pytest.mark.parametrize("deco", BOTH)
def test_signature_shows_a_factory_as_dataclass_does(deco: Deco) -> None:
    # help() and the docstring written for a class without one read the signature: a
    # default_factory showed as "<object object at 0x...>", an address, not "<factory>".
    class Bare:
        a: int
        b: tuple[int, ...] = field(default_factory=tuple)

    made = deco(Bare)
    assert str(inspect.signature(made)) == "(a: 'int', b: 'tuple[int, ...]' = <factory>) -> None"
    assert made.__doc__ == "Bare(a: 'int', b: 'tuple[int, ...]' = <factory>)"


@pytest.mark.parametrize("deco", BOTH)
def test_a_field_without_a_default_after_one_with_is_a_type_error(deco: Deco) -> None:
    # As dataclass's, a TypeError naming the field, where @frozen's compile of __init__
    # raised a SyntaxError in "<string>" that named neither class nor field.
    class Misordered:
        a: int = 0
        b: int

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        deco(Misordered)


def test_what_it_does_not_do_is_refused() -> None:
    class Late:
        a: int = field(default=0, init=False)

    with pytest.raises(TypeError, match=r"@frozen Late\.a: init=False and kw_only"):
        frozen(Late)

    class Keyword:
        a: int = field(default=0, kw_only=True)

    with pytest.raises(TypeError, match=r"@frozen Keyword\.a"):
        frozen(Keyword)

    class Pseudo:
        a: int
        b: dataclasses.InitVar[int]

    with pytest.raises(TypeError, match=r"@frozen Pseudo\.b: InitVar"):
        frozen(Pseudo)

    class Writes:
        a: int

        def __setattr__(self, name: str, value: object) -> None:
            object.__setattr__(self, name, value)

    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        frozen(Writes)


@pytest.mark.parametrize("deco", BOTH)
def test_init_annotations_resolve_in_the_class_module(deco: Deco) -> None:
    # typing.get_type_hints(C.__init__) and inspect.signature(C, eval_str=True) read the
    # fields' string annotations in __init__'s globals: a dataclass's are its module's,
    # where @frozen's were a dict of its helpers alone (NameError: name 'Path' is not defined).
    class Located:
        """A place."""

        where: Path
        tags: tuple[str, ...] = field(default_factory=tuple)

    made = deco(Located)
    assert typing.get_type_hints(made.__init__) == {
        "where": Path,
        "tags": tuple[str, ...],
        "return": type(None),
    }
    assert inspect.signature(made, eval_str=True).parameters["where"].annotation is Path
    assert made(Path("a")).tags == ()


@pytest.mark.parametrize("deco", BOTH)
def test_subclasses_are_made_and_refused_as_dataclass_does(deco: Deco) -> None:
    # @frozen's __dataclass_params__ said frozen=False: a subclass made with
    # dataclass(frozen=True) was refused ("cannot inherit frozen dataclass from a non-frozen
    # one") and one made with a plain dataclass accepted, then failing as it was built.
    class Base:
        """A base."""

        a: int

    base = deco(Base)
    params = base.__dataclass_params__
    assert (params.init, params.repr, params.eq, params.frozen) == (True, True, True, True)

    class Frozen(base):  # type: ignore[misc,valid-type]
        """Frozen, as its base."""

        b: int = 2

    child = dataclass(frozen=True)(Frozen)(1)
    assert (child.a, child.b, repr(child).endswith("Frozen(a=1, b=2)")) == (1, 2, True)
    with pytest.raises(FrozenInstanceError):
        child.b = 3

    class Thawed(base):  # type: ignore[misc,valid-type]
        """Not frozen, under a frozen base."""

        b: int = 2

    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        dataclass(Thawed)

    @dataclass
    class Plain:
        a: int

    class OnPlain(Plain):
        """Frozen, under a base that is not."""

        b: int = 2

    with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen one"):
        deco(OnPlain)
