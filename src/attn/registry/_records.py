"""A hand-written base for immutable records that are not dataclasses.

attn's records are ``@dataclass(frozen=True, slots=True)`` (report.py,
paths.py); `Record` gives the others the same behaviour by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from typing_extensions import Self


__all__ = ["Record", "final", "set_field"]


class Record:
    """Immutable, equal when their fields are, hashable, with a readable repr.

    Subclasses list their fields in ``__slots__`` and set them in ``__init__``
    with `object.__setattr__()`.
    """

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        msg = f"{type(self).__name__} is immutable"
        raise AttributeError(msg)

    def __delattr__(self, name: str) -> None:
        msg = f"{type(self).__name__} is immutable"
        raise AttributeError(msg)

    def __reduce__(self) -> tuple[object, ...]:
        # Pickle by fields: the default protocol would set them with setattr.
        return (_rebuild, (type(self), self._fields()))

    def replace(self, **changes: object) -> Self:
        """A copy with *changes* applied to the named fields."""
        new = object.__new__(type(self))
        for name in self.__slots__:
            object.__setattr__(new, name, changes.pop(name, getattr(self, name)))
        if changes:
            msg = f"{type(self).__name__} has no field {', '.join(changes)}"
            raise TypeError(msg)
        return new


def _rebuild(cls: type[Record], fields: tuple[object, ...]) -> Record:
    """The record of type *cls* with *fields*, in ``__slots__`` order (for pickle)."""
    new = object.__new__(cls)
    for name, value in zip(cls.__slots__, fields, strict=True):
        object.__setattr__(new, name, value)
    return new


#: Sets a field of a `Record` in its ``__init__``.
set_field = object.__setattr__
