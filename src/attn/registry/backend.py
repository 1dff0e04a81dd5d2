"""`Backend`, base of every backend class; `ClassPath`, where one lives (``module:qualname``)."""

from __future__ import annotations

import contextlib
import os
import sys
from _thread import _local  # threading.local, without importing threading
from typing import TYPE_CHECKING, Any, ClassVar

from attn import _fork

from .errors import InvalidPathError, Record

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Backend", "ClassPath", "code_root", "import_names", "missing_of", "parse_path"]

_MEMO = _local()  # per thread, while same_modules() is in effect: whether each module is found


def _installed(top: str) -> bool:
    memo: dict[str, bool] | None = getattr(_MEMO, "installed", None)
    memo = {} if memo is None else memo
    if top not in memo:
        with _fork.importing():
            from importlib.util import find_spec  # noqa: PLC0415 - only listing needs it
        try:
            memo[top] = sys.modules.get(top) is not None or find_spec(top) is not None
        except (ImportError, ValueError):
            memo[top] = False
    return memo[top]


@contextlib.contextmanager
def same_modules() -> Iterator[None]:
    """Within this block, this thread looks for each top-level module once (one listing's rows)."""
    outer = getattr(_MEMO, "installed", None)
    _MEMO.installed = {} if outer is None else outer
    try:
        yield
    finally:
        _MEMO.installed = outer


class Backend:
    """A backend: a class a registry hands out by name.

    [`is_available()`][is_available] checks, importing nothing, that its [`requires`][requires]
    are installed.
    """

    requires: ClassVar[tuple[str, ...]] = ()
    """Distribution names of the packages the kernel needs (``"flash-attn"``)."""

    requires_modules: ClassVar[tuple[str, ...] | None] = None
    """Their import names, in order, if not derived (``flash-attn`` -> ``flash_attn``)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Refuse a `requires` or `requires_modules` that cannot be right."""
        super().__init_subclass__(**kwargs)
        if isinstance(cls.requires, (str, tuple, list)):  # anything else is checked when used
            import_names(cls)

    @classmethod
    def get_name(cls) -> str:
        """The backend's display name; the class name unless overridden."""
        return cls.__name__

    @classmethod
    def missing_requirements(cls) -> tuple[str, ...]:
        """The entries of [`requires`][requires] that are not installed."""
        return _not_installed(cls)

    @classmethod
    def is_available(cls) -> bool:
        """Whether every package in [`requires`][requires] is installed (nothing is imported)."""
        return not cls.missing_requirements()


def _not_installed(cls: type[Any]) -> tuple[str, ...]:
    modules = (m.split(".", 1)[0] for m in import_names(cls))
    return tuple(d for d, m in zip(cls.requires, modules, strict=True) if not _installed(m))


def missing_of(cls: type) -> tuple[str, ...] | None:
    """*cls*'s missing kernel packages: its ``missing_requirements()``, else Backend's rule."""
    if callable(check := getattr(cls, "missing_requirements", None)):
        return tuple(str(r) for r in check())
    return None if getattr(cls, "requires", None) is None else _not_installed(cls)


def import_names(cls: type[Any]) -> tuple[str, ...]:
    """The import names of *cls*'s `requires`, in order (`TypeError` if they cannot be right)."""
    requires, modules = cls.requires, getattr(cls, "requires_modules", None)
    for attribute in ("requires", "requires_modules"):
        if isinstance(value := getattr(cls, attribute, None), str):
            raise TypeError(
                f"{cls.__qualname__}.{attribute} is the string {value!r}, not a tuple: "
                f"write {attribute} = ({value!r},)"
            )
    if modules is None:
        return tuple(name.replace("-", "_").replace(".", "_") for name in requires)
    if len(modules) != len(requires):
        raise TypeError(
            f"{cls.__qualname__}.requires_modules {tuple(modules)!r} does not match requires "
            f"{tuple(requires)!r}: give one import name per distribution, in the same order"
        )
    return tuple(modules)


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

    def __str__(self) -> str:
        """Render the canonical colon form."""
        return self.colon


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


def code_root(module: str) -> str | None:
    """The folder the top-level package (or module) of the imported *module* came from."""
    top = sys.modules.get(module.partition(".")[0])
    spec = getattr(top, "__spec__", None)
    locations = list(getattr(spec, "submodule_search_locations", None) or ())
    where = locations[0] if locations else getattr(top, "__file__", None)
    return os.path.dirname(where) if isinstance(where, str) else None  # noqa: PTH120
