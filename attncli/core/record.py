"""Records: dataclasses whose methods are written once here, not generated as source for each class at every start.

``@dataclass`` writes the text of each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` and compiles it when the class is made: on Python 3.11 that compile was the
largest part of what a small ``attncli compute`` ran beyond importing Typer, numpy and PyYAML (docs/speed.md,
"Start-up").  :func:`record` makes the same class with ``dataclass(init=False, repr=False, eq=False)`` (its fields,
``dataclasses.fields`` and ``dataclasses.replace`` as before) and gives it these methods, which read the fields
when they run: the same arguments (positional in the fields' order unless ``kw_only``, defaults, default
factories), the same ``repr``, ``==`` and ``hash()`` from the fields (or identity with ``eq=False``), and with
``frozen`` an assignment or deletion raises :class:`dataclasses.FrozenInstanceError`.

>>> @record
... class Pair:
...     a: int
...     b: tuple = ()
>>> Pair(1), Pair(1, b=(2,)) == Pair(1, (2,)), hash(Pair(1)) == hash(Pair(1))
(Pair(a=1, b=()), True, True)
>>> Pair(1).a = 2
Traceback (most recent call last):
dataclasses.FrozenInstanceError: cannot assign to field 'a'
"""

from __future__ import annotations

import reprlib
from dataclasses import MISSING, FrozenInstanceError, dataclass, fields


def record(cls: type | None = None, /, *, eq: bool = True, frozen: bool = True, kw_only: bool = False):
    """``@dataclass(eq=eq, frozen=frozen, kw_only=kw_only)`` without generated source (see the module)."""
    def make(cls: type) -> type:
        if "__dataclass_fields__" not in cls.__dict__:  # (make_dataclass(…, init=False, repr=False, eq=False) is made)
            cls = dataclass(init=False, repr=False, eq=False, kw_only=kw_only)(cls)
        given = [f for f in fields(cls) if f.init]
        cls.__init__ = _init(cls, given, 0 if kw_only else len(given))
        cls.__repr__ = _repr(cls, tuple(f.name for f in fields(cls) if f.repr))
        if eq:
            _compare(cls, frozen)
        if frozen:
            cls.__setattr__, cls.__delattr__ = _no_assignment, _no_deletion
        return cls

    return make if cls is None else make(cls)


def _init(cls: type, given: list, positional: int):
    """The class's ``__init__``: its init fields by position (the first ``positional``) or name, else their
    defaults; stored in the instance's ``__dict__`` in the fields' order (as a frozen dataclass's own
    ``object.__setattr__`` stores them)."""
    names = tuple(f.name for f in given)
    known = frozenset(names)
    defaults = {f.name: f.default for f in given if f.default is not MISSING}
    factories = {f.name: f.default_factory for f in given if f.default_factory is not MISSING}
    where = f"{cls.__qualname__}.__init__()"

    def __init__(self, *args, **kwargs) -> None:
        if args:
            if len(args) > positional:
                raise TypeError(f"{where} takes {positional + 1} positional arguments but {len(args) + 1} were given")
            for name in names[:len(args)]:
                if name in kwargs:
                    raise TypeError(f"{where} got multiple values for argument {name!r}")
            kwargs.update(zip(names, args))
        if not known.issuperset(kwargs):
            raise TypeError(f"{where} got an unexpected keyword argument {next(n for n in kwargs if n not in known)!r}")
        values = defaults | kwargs
        for name, factory in factories.items():
            if name not in values:
                values[name] = factory()
        if len(values) < len(names):
            raise TypeError(f"{where} missing 1 required argument: {next(n for n in names if n not in values)!r}")
        self.__dict__.update({name: values[name] for name in names})

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _repr(cls: type, shown: tuple[str, ...]):
    """The class's ``__repr__``: ``Name(a=1, b=2)`` with the fields ``shown``, as a dataclass's (``...`` for the
    record itself inside one of its fields)."""
    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in shown)})"

    __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
    return __repr__


def _compare(cls: type, frozen: bool) -> None:
    """``==`` field by field with an object of the same class; ``hash()`` of the same fields when frozen (a mutable
    record with ``==`` has none, as a dataclass)."""
    compared = tuple(f.name for f in fields(cls) if f.compare)
    hashed = tuple(f.name for f in fields(cls) if (f.compare if f.hash is None else f.hash))

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in hashed))

    cls.__eq__ = __eq__
    cls.__hash__ = __hash__ if frozen else None


def _no_assignment(self, name: str, value) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _no_deletion(self, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
