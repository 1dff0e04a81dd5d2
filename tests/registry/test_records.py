"""The records attn hands out: immutable, equal by value, picklable."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any, NamedTuple

import pytest

from attn.registry import report
from attn.registry.codes import Code
from attn.registry.errors import ClassPath, Record
from attn.registry.report import Finding, PluginRecord, _Fields


def _plugin() -> PluginRecord:
    return PluginRecord(
        "FLASH_ATTN",
        "acme.m:B",
        "attn-acme",
        "attn-acme",
        "1.0",
        "/site/attn_acme-1.0.dist-info",
        0,
        ("attn>=0.1",),
        "used",
        None,
        ClassPath("acme.m", "B"),
    )


def test_records_pickle_to_equal_records():
    """A record sent to another process (pickled) arrives equal, with every field."""
    plugin = _plugin()
    copy = pickle.loads(pickle.dumps(plugin))  # noqa: S301 - our own bytes
    assert copy == plugin
    assert (copy.distribution_version, copy.path) == ("1.0", ClassPath("acme.m", "B"))


def test_records_refuse_changes():
    """A record's fields cannot be set; replace() makes a changed copy."""
    finding = Finding(Code.INVALID, "attn-acme", "bad value", "fix it")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'kind'"):
        finding.kind = "shadowed"  # type: ignore[misc]
    plugin = _plugin()
    assert dataclasses.replace(plugin, status="shadowed").status == "shadowed"
    assert plugin.status == "used"


class _Located(ClassPath):
    """A class path with one more attribute, as code might subclass it."""

    where = ""


def _located(module: str, qualname: str, where: str) -> _Located:
    path = _Located(module, qualname)
    path.where = where
    return path


def test_a_subclass_with_one_more_field_still_compares_the_paths():
    """Two paths that differ are not equal, whatever a subclass adds."""
    assert _located("a.m", "A", "here") != _located("b.m", "B", "here")
    assert _located("a.m", "A", "here") == _located("a.m", "A", "here")


def _record(base: type, name: str) -> type:
    """A record with defaults and a method, on *base*, pickled by *name* from this module."""

    class Point(base):  # type: ignore[misc, valid-type]
        x: int
        y: str = "y"
        z: tuple[int, ...] = ()

        def twice(self) -> int:
            return self.x * 2

    Point.__name__ = Point.__qualname__ = name
    return Point


_Ours: Any = _record(Record, "_Ours")
_Library: Any = _record(NamedTuple, "_Library")  # type: ignore[arg-type]


class _OursAgain(_Ours):
    """A subclass of a record: it declares no field, and has a __dict__."""

    w: int


class _LibraryAgain(_Library):
    """The same subclass of the NamedTuple."""

    w: int


_CALLS = [
    ((1,), {}),
    ((1, "a"), {}),
    ((1, "a", (2,)), {}),
    ((), {"x": 1, "z": (3,)}),
    ((1,), {"z": (3,)}),
    ((), {}),
    ((1, "a", (2,), 4), {}),
    ((1,), {"x": 2}),
    ((1,), {"q": 2}),
]


def _outcome(kind: type, args: tuple[object, ...], kwargs: dict[str, object]) -> object:
    try:
        record = kind(*args, **kwargs)
    except TypeError:
        return TypeError
    name = kind.__name__
    return (tuple(record), repr(record).replace(name, "R"), record.x, record.y, record.z)


@pytest.mark.parametrize(("args", "kwargs"), _CALLS)
def test_record_is_created_as_a_named_tuple_is(args, kwargs):
    """attn's record base takes the arguments a NamedTuple takes, and refuses the same ones."""
    assert _outcome(_Ours, args, kwargs) == _outcome(_Library, args, kwargs)


def test_record_behaves_as_a_named_tuple():
    """Fields, defaults, equality, hashing, replacing, copying and pickling are the library's."""
    ours, library = _Ours(1, z=(2,)), _Library(1, z=(2,))
    assert (_Ours._fields, _Ours._field_defaults) == (_Library._fields, _Library._field_defaults)
    assert ours == library == (1, "y", (2,))
    assert hash(ours) == hash(library)
    assert ours.twice() == library.twice() == 2
    assert tuple(ours._replace(y="b")) == tuple(library._replace(y="b")) == (1, "b", (2,))
    assert type(ours._replace(y="b")) is _Ours
    assert _Ours.__match_args__ == _Library.__match_args__
    match ours:
        case _Ours(1, "y", z):
            assert z == (2,)
        case _:
            pytest.fail("a record matches by position, as a NamedTuple")
    for record in (ours, library):
        # An unknown field: the library raises ValueError, TypeError from Python 3.13 on.
        with pytest.raises((ValueError, TypeError), match="q"):
            record._replace(q=1)
        with pytest.raises(AttributeError):
            record.x = 2  # type: ignore[misc]
        assert not hasattr(record, "__dict__")
        assert copy.copy(record) == record
        again = pickle.loads(pickle.dumps(record))  # noqa: S301 - our own bytes
        assert (type(again), again) == (type(record), record)
    assert _OursAgain._fields == _LibraryAgain._fields == ("x", "y", "z")
    assert hasattr(_OursAgain(1), "__dict__")
    assert hasattr(_LibraryAgain(1), "__dict__")


def _dataclass(base: type, name: str, decorator: Any) -> Any:
    """A record class made by *decorator* on *base*, pickled by *name* from this module."""

    @decorator
    class Row(base):  # type: ignore[misc, valid-type]
        name: str
        tags: tuple[str, ...] = ()
        note: str | None = None

        def __post_init__(self) -> None:
            if self.note == "refused":
                raise ValueError(self.note)

    Row.__name__ = Row.__qualname__ = name
    return Row


_Shared: Any = _dataclass(_Fields, "_Shared", report._record(frozen=True, slots=True))
_Plain: Any = _dataclass(object, "_Plain", dataclasses.dataclass(frozen=True, slots=True))


def _made(kind: type, args: tuple[object, ...], kwargs: dict[str, object]) -> object:
    try:
        record = kind(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        return type(exc)
    return dataclasses.astuple(record), repr(record).replace(kind.__name__, "R")


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        *_CALLS,
        (("a", ("x",), "n"), {}),
        (("a",), {"note": "n"}),
        ((), {"name": "a", "tags": ("y",)}),
        (("a",), {"name": "b"}),
        (("a",), {"note": "refused"}),  # __post_init__ raises
    ],
)
def test_discovery_records_are_made_as_dataclasses(args, kwargs):
    """The discovery records' one __init__ binds arguments, defaults and __post_init__ alike."""
    assert _made(_Shared, args, kwargs) == _made(_Plain, args, kwargs)
    assert _Shared.__match_args__ == _Plain.__match_args__ == ("name", "tags", "note")


def test_discovery_records_compare_show_and_hash_as_dataclasses():
    """The repr, == and hash written once for the discovery records are the dataclass's."""
    ours, plain = _Shared("a", ("x",)), _Plain("a", ("x",))
    assert repr(ours).replace("_Shared", "R") == repr(plain).replace("_Plain", "R")
    assert hash(ours) == hash(plain) == hash(("a", ("x",), None))
    assert ours == _Shared("a", ("x",))
    assert plain == _Plain("a", ("x",))
    assert ours != _Shared("a")
    assert plain != _Plain("a")
    assert (ours == plain, ours.__eq__(("a", ("x",), None))) == (False, NotImplemented)
    assert dataclasses.replace(ours, note="n") == _Shared("a", ("x",), "n")
    for record in (ours, plain):
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'name'"):
            record.name = "b"
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'tags'"):
            del record.tags
    with pytest.raises(dataclasses.FrozenInstanceError):  # the library raises TypeError there
        ours.other = 1
    assert copy.copy(ours) == copy.deepcopy(ours) == ours
    assert dataclasses.asdict(ours) == dataclasses.asdict(plain)
    assert pickle.loads(pickle.dumps(ours)) == ours  # noqa: S301 - our own bytes
    assert not hasattr(ours, "__dict__")
    assert {ours, _Shared("a", ("x",))} == {ours}
