"""core.record (issue 39, start-up): a record behaves as the same class made by the standard library's
``@dataclass`` (the reference): the same arguments, defaults, repr, ==, hash(), frozenness, fields and replace()."""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError, dataclass, field

import pytest

from attncli.core.record import record


def pair(make):
    """The same class body made by ``make`` (record, or the standard dataclass)."""
    class Pair:
        """Two values and a list made per instance."""

        a: int
        b: tuple = (1, 2)
        c: list = field(default_factory=list, hash=False)  # (compared, not hashed)
        d: str = field(default="x", compare=False, repr=False)

    return make(Pair)


MADE = {"record": pair(record), "dataclass": pair(dataclass(frozen=True))}


@pytest.mark.parametrize("args, kwargs", [((1,), {}), ((1, (3,)), {"c": [4]}), ((), {"a": 2, "d": "y"})])
def test_the_same_values_repr_and_equality(args, kwargs):
    ours, theirs = MADE["record"](*args, **kwargs), MADE["dataclass"](*args, **kwargs)
    assert repr(ours) == repr(theirs)  # (the class's name is the same; d is left out of both)
    assert [getattr(ours, f.name) for f in dataclasses.fields(ours)] == \
        [getattr(theirs, f.name) for f in dataclasses.fields(theirs)]
    other = MADE["record"](*args, **kwargs)
    assert ours == other and hash(ours) == hash(other) == hash(theirs)  # (hash of the same tuple of fields)
    assert ours != MADE["record"](9) and ours != theirs  # (another class: not equal, as a dataclass's ==)


def test_a_default_factory_is_called_per_instance():
    one, two = MADE["record"](1), MADE["record"](1)
    assert one.c == [] and one.c is not two.c


def test_d_is_not_compared():
    assert MADE["record"](1, d="p") == MADE["record"](1, d="q")


@pytest.mark.parametrize("how", ["record", "dataclass"])
def test_frozen(how):
    made = MADE[how](1)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'a'"):
        made.a = 2
    with pytest.raises(FrozenInstanceError, match="cannot delete field 'a'"):
        del made.a


@pytest.mark.parametrize("how", ["record", "dataclass"])
@pytest.mark.parametrize("args, kwargs", [((), {}), ((1, 2, 3, 4, 5), {}), ((1,), {"a": 1}), ((1,), {"e": 0})])
def test_wrong_arguments_are_a_type_error(how, args, kwargs):
    with pytest.raises(TypeError):
        MADE[how](*args, **kwargs)


def test_replace_and_fields():
    made = dataclasses.replace(MADE["record"](1, c=[5]), b=(7,))
    assert (made.a, made.b, made.c) == (1, (7,), [5])
    assert [f.name for f in dataclasses.fields(made)] == ["a", "b", "c", "d"]


def test_eq_false_is_identity_and_kw_only():
    @record(eq=False, kw_only=True)
    class Arrays:
        """Arrays: == and hash() by identity."""

        x: int = 0

    one = Arrays(x=1)
    assert one == one and one != Arrays(x=1) and hash(one) == object.__hash__(one)
    with pytest.raises(TypeError):
        Arrays(1)


def test_a_mutable_record_has_no_hash():
    @record(frozen=False)
    class Place:
        """A mutable record with ==."""

        path: str

    place = Place("a")
    place.path = "b"
    assert place == Place("b") and Place.__hash__ is None
    assert dataclasses.is_dataclass(place)


def test_a_subclass_record_has_its_base_fields():
    @record
    class Base:
        """A base."""

        a: int

    @record(kw_only=True)
    class Child(Base):
        """A child."""

        b: int = 2

    assert repr(Child(a=1)) == "test_a_subclass_record_has_its_base_fields.<locals>.Child(a=1, b=2)"


@record
class Kept:
    """A record at a module's top level, as pickle finds classes."""

    a: int
    b: list = field(default_factory=list, hash=False)


def test_copies_and_pickles_are_equal_records():
    import copy
    import pickle

    made = Kept(1, [3])
    for other in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert other == made and other is not made and type(other) is Kept
    assert copy.deepcopy(made).b is not made.b
