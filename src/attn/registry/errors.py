"""attn's errors and warnings, how plugin exceptions show, the record base."""

from __future__ import annotations

import copyreg
import operator
from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NamedTuple as Record  # to type checkers; attn calls no _make() or _asdict()
else:

    class _RecordType(type):
        def __new__(mcs, name: str, bases: tuple[type, ...], body: dict[str, Any]) -> type:
            if bases != (tuple,) and Record in bases:  # not Record itself, nor a record's subclass
                fields = tuple(body.get("__annotations__", ()))
                body["_field_defaults"] = {f: body.pop(f) for f in fields if f in body}
                body.update({f: property(operator.itemgetter(i)) for i, f in enumerate(fields)})
                body.update(__slots__=(), _fields=fields, __match_args__=fields)
            return super().__new__(mcs, name, bases, body)

    class Record(tuple, metaclass=_RecordType):
        """Records as typing.NamedTuple makes them, without compiling code for each (0.14 ms)."""

        __slots__ = ()

        def __new__(cls, *args: object, **kwargs: object) -> tuple[object, ...]:
            """A record of *args* and *kwargs*, the defaults for the fields they leave out."""
            if kwargs or len(args) != len(cls._fields):
                rest, given = cls._fields[len(args) :], {**cls._field_defaults, **kwargs}
                if len(args) > len(cls._fields) or not kwargs.keys() <= set(rest) <= given.keys():
                    raise TypeError(f"{cls.__name__}{cls._fields} given {args} and {kwargs}")
                args += tuple(given[f] for f in rest)
            return tuple.__new__(cls, args)

        def __repr__(self) -> str:
            """``Name(field=value, ...)``."""
            return f"{type(self).__name__}({', '.join(map('{}={!r}'.format, self._fields, self))})"

        def __getnewargs__(self) -> tuple[object, ...]:
            """The fields, which copying and pickling pass to ``__new__``."""
            return tuple(self)

        def _replace(self, **changes: object) -> tuple[object, ...]:
            values = tuple(map(changes.pop, self._fields, self))
            return type(self)(*values, **changes)  # an unknown field is left in *changes*


def passes_through(exc: BaseException) -> bool:
    """Whether *exc* must propagate out of plugin code, not be reported: the user's Ctrl-C."""
    return issubclass(type(exc), KeyboardInterrupt)  # __class__ may raise; not GeneratorExit


def describe(exc: BaseException) -> str:
    """``Type: message`` of *exc*, even when its ``__str__`` raises (``SystemExit`` too)."""
    try:
        name = type(exc).__name__
    except BaseException as inner:  # a hostile metaclass
        if passes_through(inner):
            raise
        name = "exception"
    if isinstance(exc, SystemExit):
        return f"{name}: its code tried to exit the process (exit code {shown(exc.code)})"
    try:
        text = str(exc)
    except BaseException as inner:  # plugin code can break even str()
        if passes_through(inner):
            raise
        return f"{name} (its message cannot be shown: str() raised {type(inner).__name__})"
    return f"{name}: {text}" if text else name


def reinstalling(name: str, version: str | None) -> str:
    """The pip command reinstalling *name* as installed: no upgrade, its dependencies untouched."""
    pinned = f"'{name}=={version}'" if version else name
    return f"pip install --force-reinstall --no-deps {pinned}"


def joined(items: Sequence[str], word: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``; *word* ``"or"`` for ``a, b or c``."""
    return f"{', '.join(items[:-1])} {word} {items[-1]}" if len(items) > 1 else "".join(items)


def shown(value: object, width: int = 60) -> str:
    """``repr(value)``, cut to *width* with ``...``; a note when its ``__repr__`` raises."""
    try:
        return text if len(text := repr(value)) <= width else f"{text[: width - 3]}..."
    except BaseException as inner:  # plugin objects can break even repr()
        if passes_through(inner):
            raise
        return "(its repr() raises)"


class AttnError(Exception):
    """Base class of every attn error; each is also the builtin callers catch, and pickles whole."""

    def __init__(self, *args: object, **culprit: object) -> None:
        """Hold the message (*args*) and each keyword of the *culprit* as an attribute."""
        super().__init__(*args)
        for key, value in culprit.items():
            setattr(self, key, value)  # ImportError's name and path are slots, not in vars()

    def __reduce__(self) -> tuple[object, ...]:
        """Rebuild without ``__init__``, whose arguments are not the message alone."""
        state = dict(vars(self))
        if isinstance(self, ImportError):  # slots of ImportError, not in vars()
            state.update(msg=self.msg, name=self.name, path=self.path)
        return (copyreg.__newobj__, (type(self), *self.args), state)  # type: ignore[attr-defined]


class AttnWarning(UserWarning):
    """Base class of every warning issued by attn."""


@final
class ConflictWarning(AttnWarning):
    """Two or more distributions claim the same backend name in one group."""


@final
class PluginWarning(AttnWarning):
    """A plugin or a plugin control needs the user's attention."""


@final
class RejectedPluginWarning(AttnWarning):
    """A plugin entry point was rejected; the name it claims keeps its default or stays unknown."""


class InvalidPathError(AttnError, ValueError):
    """A class path is not of the form ``module:QualName`` or ``module.QualName``."""

    def __init__(self, path: object, reason: str) -> None:
        """Record the offending *path* and why it was refused."""
        self.path, self.reason = path, reason
        super().__init__(f"Invalid class path: {path!r}: {reason}")


class ClassPath(Record):
    """Where a backend class lives: a module and a qualified name in it (see `parse_path()`)."""

    module: str
    qualname: str

    @property
    def colon(self) -> str:
        """The canonical ``module:qualname`` form."""
        return f"{self.module}:{self.qualname}"

    @property
    def dotted(self) -> str:
        """The ``module.qualname`` form that ``get_path()`` returns."""
        return f"{self.module}.{self.qualname}"


def parse_path(path: object) -> ClassPath:
    """Parse ``module:QualName`` or ``module.QualName``; `InvalidPathError` if neither."""
    if isinstance(path, ClassPath):
        return path
    if not isinstance(path, str):
        raise InvalidPathError(path, f"expected a string, got {type(path).__name__}")
    text = path.strip()
    if text.count(":") > 1:
        raise InvalidPathError(path, "more than one ':'; expected 'module:QualName'")
    if ":" in text:
        module, _, qualname = (part.strip() for part in text.partition(":"))
    else:
        module, _, qualname = text.rpartition(".")
        if not module:
            why = "no module part; expected 'module:QualName' or 'module.QualName'"
            raise InvalidPathError(path, why)
    for part, what in ((module, "module"), (qualname, "qualified")):
        if what == "qualified" and "<locals>" in part:
            why = "a class defined inside a function cannot be imported by path"
            raise InvalidPathError(path, why)
        if not (part and all(p.isidentifier() for p in part.split("."))):
            raise InvalidPathError(path, f"{part!r} is not a dotted {what} name")
    return ClassPath(module, qualname)


@final
class UnknownBackendError(AttnError, ValueError):
    """A backend name that no built-in, plugin or registration provides."""

    name: str
    registry: str


@final
class BackendNotRegisteredError(AttnError, ValueError):
    """A member without a default (``CUSTOM``) was used before registration."""

    name: str
    registry: str


class BackendLoadError(AttnError, ImportError):
    """A backend's class could not be imported or is not a backend class."""

    backend: str
    registry: str
    distribution: str | None
    version: str | None
    detail: str  # what went wrong; path (of ImportError) is the class path


@final
class BackendInterfaceError(BackendLoadError):
    """The object a backend path names is not a class of the registry's interface."""


@final
class PluginProblemError(AttnError, RuntimeError):
    """Strict mode (``ATTN_STRICT=1``) found a problem with installed plugins."""

    heading: str  # the switch, the registry's group and the number of problems
    problems: tuple[str, ...]  # one sentence each

    @staticmethod
    def _render(heading: str, problems: tuple[str, ...], doctor: str) -> str:  # doctor: the fixes
        return "\n".join([heading, *(f"  - {p}" for p in problems), f"Run {doctor} for the fixes."])


@final
class AttnConfigError(AttnError, ValueError):
    """An ``ATTN_*`` environment variable has a value attn cannot use."""

    def __init__(self, variable: str, value: str, expected: str) -> None:
        """Record the *variable*, its *value*, and what was *expected*."""
        self.variable, self.value = variable, value
        super().__init__(f"Invalid value for {variable}: {value!r}; expected {expected}")


@final
class StateMismatchError(AttnError):
    """A worker resolves backends differently from the driver whose state it applied."""

    differences: tuple[tuple[str, str], ...] = ()  # (registry, name) that resolve differently
    missing_registries: tuple[str, ...] = ()
    selections: tuple[str, ...] = ()  # the registries whose selections differ


class SelectionError(AttnError, ValueError):
    """No candidate is valid, or the explicit choice is not: every candidate with its reasons."""

    def __init__(
        self,
        message: str,
        registry: str = "",
        tried: tuple[object, ...] = (),
        explicit: bool = False,
    ) -> None:
        """Record the *registry*'s name, the rows *tried* and whether the choice was *explicit*."""
        super().__init__(message, registry, tried, explicit)
        self.registry, self.tried, self.explicit = registry, tried, explicit  # tried: Candidates

    def __str__(self) -> str:
        """The message alone."""
        return str(self.args[0])


# Each class shows (in reprs, tracebacks and pickles) as of the package users import it from.
for _module, _classes in (
    ("attn", (AttnError, AttnWarning, ConflictWarning, RejectedPluginWarning, BackendLoadError)),
    ("attn", (UnknownBackendError, StateMismatchError, SelectionError)),
    ("attn.registry", (PluginWarning, InvalidPathError, BackendNotRegisteredError)),
    ("attn.registry", (BackendInterfaceError, PluginProblemError, AttnConfigError)),
):
    for _cls in _classes:
        _cls.__module__ = _module
