"""`@frozen`: a frozen dataclass whose class costs a third of `dataclass(frozen=True)`'s to make.

Every value between stages is a frozen dataclass, and a one-attempt run makes about sixty
of their classes as it imports (issue 30, item 4: the run's fixed cost). For each one,
`dataclass(frozen=True)` writes out six methods (`__init__`, `__repr__`, `__eq__`,
`__hash__`, `__setattr__`, `__delattr__`) as source and compiles them, about 0.7 ms a class
on Python 3.11 (3.13, which compiles them in one go, is no faster): 40 ms of a run's 300.
Only `__init__` gains much from being compiled for its fields (it runs for every value
made); the other five are written once, here, over the class's field names: an equality or
a hash costs a fraction of a microsecond more (an `operator.attrgetter` call), and an
attempt makes about a dozen. So `frozen`
lets `dataclass` read the fields (the same `Field`s, defaults, `field()` options and
inheritance, `__dataclass_fields__`, `__match_args__`) with none of its methods made,
compiles `__init__` alone, and gives the class the five shared methods.

The class is a dataclass as far as anything reads one: `dataclasses.fields`, `replace`,
`asdict` and `is_dataclass` work as before; equality and the hash cover the fields with
`compare` (`hash`) on, the repr those with `repr` on, an assignment raises
`FrozenInstanceError`, and a method the class writes itself is kept, as `dataclass` keeps
it. What is not supported is refused when the class is made: `init=False` and `kw_only`
fields, and `InitVar`s. Its `__dataclass_params__` say what it is, frozen with `__init__`,
`__repr__` and `__eq__`, so a subclass may be made with `dataclass(frozen=True)` as with
`@frozen`, and one made with a plain `dataclass` is refused, as `dataclass` refuses it.
"""

from __future__ import annotations

import dataclasses
import inspect
import reprlib
import sys
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

T = TypeVar("T")


class _Factory:
    """What a field with a default_factory gets as its parameter's default: the factory is
    called in `__init__` when the value given is this, as `dataclass` does with its own.
    Shown as dataclass's is, `<factory>`, in the signature (help(), the docstring written
    for a class without one), where a bare object() showed its address."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _frozen(cls: type[T]) -> type[T]:
    """`frozen` at run time (the name is typed for checkers below)."""
    body = cls.__dict__
    written = body.get("__doc__")
    for name in ("__setattr__", "__delattr__"):
        if name in body:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    own = {name for name in ("__init__", "__repr__", "__eq__") if name in body}
    # As `dataclass` decides: a class that writes __eq__ gets __hash__ = None from Python,
    # which is not a hash of its own.
    class_hash = body.get("__hash__", dataclasses.MISSING)
    if not (class_hash is dataclasses.MISSING or (class_hash is None and "__eq__" in body)):
        own.add("__hash__")
    # A frozen dataclass base (a @frozen one, whose params say frozen below) makes dataclass
    # refuse a class it is told is not frozen; its __setattr__ and __delattr__, made for
    # that one case (the package has no such subclass), are replaced below.
    bases = [
        vars(b)["__dataclass_params__"]
        for b in cls.__mro__[1:]
        if "__dataclass_params__" in vars(b)
    ]
    if bases and not any(params.frozen for params in bases):
        raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
    dataclasses.dataclass(init=False, repr=False, eq=False, frozen=bool(bases))(cls)
    # What the class is once made, as dataclass(frozen=True) says it: a subclass made with
    # dataclass(frozen=True) is allowed, a plain dataclass's refused, where they were the
    # other way round.
    params = cls.__dataclass_params__  # type: ignore[attr-defined]  # (a dataclass now)
    params.init = params.repr = params.eq = params.frozen = True
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # (a dataclass now)
    _refuse_unsupported(cls, fields)
    compared = _values(tuple(f.name for f in fields if f.compare))
    hashed = _values(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))
    names = frozenset(f.name for f in fields)
    methods: dict[str, Callable[[], object]] = {
        "__init__": lambda: _init(cls, fields),
        "__repr__": lambda: _repr(cls, tuple(f.name for f in fields if f.repr)),
        "__eq__": lambda: _eq(cls, compared),
        "__hash__": lambda: _hash(cls, hashed),
        "__setattr__": lambda: _setattr(cls, names),
        "__delattr__": lambda: _delattr(cls, names),
    }
    for name, make in methods.items():
        if name not in own:
            setattr(cls, name, make())
    if not written:
        cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
    return cls


def _refuse_unsupported(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """What the one `__init__` written here does not do: fields left out of it or taken by
    keyword only, and InitVars (in `__dataclass_fields__`, not among the fields)."""
    every: dict[str, dataclasses.Field[Any]] = cls.__dataclass_fields__  # type: ignore[attr-defined]
    for f in fields:
        if not f.init or f.kw_only is True:
            raise TypeError(
                f"@frozen {cls.__name__}.{f.name}: init=False and kw_only fields are not supported"
            )
    for name, f in every.items():
        if isinstance(f.type, dataclasses.InitVar) or "InitVar" in str(f.type):
            raise TypeError(f"@frozen {cls.__name__}.{name}: InitVar fields are not supported")


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """`__init__` compiled for these fields: each set with object.__setattr__ (the class's
    own refuses), then `__post_init__` if the class has one.

    Made as dataclass makes its own: inside a function that takes the helpers (closure
    cells, named as no field is), compiled with the class's module for its globals, so
    `typing.get_type_hints(C.__init__)` and `inspect.signature(C, eval_str=True)` resolve
    the fields' string annotations (`Path`), as they do for a dataclass's."""
    helpers: dict[str, object] = {
        "__frozen_set__": object.__setattr__,
        "__frozen_factory__": _FACTORY,
    }
    # The instance's own name is one no field can take either (a field named `self`).
    params, lines = ["__frozen_self__"], []
    defaulted = ""
    for f in fields:
        has_default = not (
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )
        if defaulted and not has_default:
            # As dataclass refuses it, a TypeError naming the class, where the source below
            # failed to compile (a SyntaxError in "<string>", no class named).
            raise TypeError(
                f"@frozen {cls.__name__}: non-default argument {f.name!r} follows default "
                f"argument {defaulted!r}"
            )
        defaulted = defaulted or (f.name if has_default else "")
        if f.default_factory is not dataclasses.MISSING:
            helpers[f"__frozen_make_{f.name}__"] = f.default_factory
            params.append(f"{f.name}=__frozen_factory__")
            value = f"__frozen_make_{f.name}__() if {f.name} is __frozen_factory__ else {f.name}"
        else:
            if f.default is not dataclasses.MISSING:
                helpers[f"__frozen_default_{f.name}__"] = f.default
                params.append(f"{f.name}=__frozen_default_{f.name}__")
            else:
                params.append(f.name)
            value = f.name
        lines.append(f"__frozen_set__(__frozen_self__, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        lines.append("__frozen_self__.__post_init__()")
    body = "\n        ".join(lines or ["pass"])
    source = (
        f"def __frozen_create__({', '.join(helpers)}):\n"
        f"    def __init__({', '.join(params)}):\n        {body}\n"
        "    return __init__"
    )
    module = sys.modules.get(cls.__module__)
    made: dict[str, Any] = {}
    # The source is made above from the class's field names; the module's globals are
    # read, not written (the function is defined in `made`).
    exec(source, module.__dict__ if module is not None else {}, made)
    init: Callable[..., None] = made["__frozen_create__"](**helpers)
    # dataclass's own __init__ is annotated; inspect.signature (and so the docstring written
    # for a class without one) shows the fields' types from these.
    init.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init


def _values(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """The fields' values as one tuple (attrgetter returns a bare value for one name)."""
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda value: (one(value),)
    if not names:
        return lambda _: ()
    return attrgetter(*names)


def _repr(cls: type, names: tuple[str, ...]) -> Callable[[object], str]:
    @reprlib.recursive_repr()
    def __repr__(self: object) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
    return __repr__


def _eq(
    cls: type, values: Callable[[object], tuple[object, ...]]
) -> Callable[[object, object], bool]:
    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
    return __eq__


def _hash(cls: type, values: Callable[[object], tuple[object, ...]]) -> Callable[[object], int]:
    def __hash__(self: object) -> int:
        return hash(values(self))

    __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
    return __hash__


def _setattr(cls: type, names: frozenset[str]) -> Callable[[object, str, object], None]:
    def __setattr__(self: object, name: str, value: object) -> None:
        # As dataclass's: a plain subclass may set attributes of its own.
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]

    return __setattr__


def _delattr(cls: type, names: frozenset[str]) -> Callable[[object, str], None]:
    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    return __delattr__


if TYPE_CHECKING:
    from typing_extensions import dataclass_transform

    @dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
    def frozen(cls: type[T]) -> type[T]:
        """Type checkers read `@frozen` as `@dataclass(frozen=True)`."""
        ...

else:
    frozen = _frozen
