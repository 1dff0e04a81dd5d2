"""Importing a backend's class by path and checking it against the interface."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, final

from .errors import BackendInterfaceError, BackendLoadError

if TYPE_CHECKING:
    from .paths import ClassPath

__all__ = ["LoadContext", "load_class"]


@final
@dataclass(frozen=True, slots=True)
class LoadContext:
    """Who a path belongs to, so a failure can say so."""

    backend: str
    registry: str
    noun: str
    source: str
    """How messages name where the path came from, e.g. ``acc-foo 1.0``."""
    fix: str
    distribution: str | None = None
    version: str | None = None


def _fail(
    ctx: LoadContext, path: ClassPath, detail: str, *, interface: bool = False
) -> BackendLoadError:
    cls = BackendInterfaceError if interface else BackendLoadError
    return cls(
        f"Cannot load {ctx.noun} {ctx.backend!r} from {ctx.source} "
        f"(path {path.colon!r}): {detail}. {ctx.fix}",
        backend=ctx.backend,
        registry=ctx.registry,
        path=path.colon,
        distribution=ctx.distribution,
        version=ctx.version,
        detail=detail,
    )


def load_class(path: ClassPath, interface: type, ctx: LoadContext) -> type:
    """Import *path* and return the class, which must derive from *interface*.

    Raises:
        BackendLoadError: the module or attribute cannot be imported; the
            original exception is chained as ``__cause__``.
        BackendInterfaceError: the object is not a subclass of *interface*.
    """
    try:
        obj: object = importlib.import_module(path.module)
        for part in path.qualname.split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise _fail(ctx, path, f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(obj, type):
        raise _fail(
            ctx,
            path,
            f"{path.colon!r} is not a class but {type(obj).__name__} {obj!r:.60}",
            interface=True,
        )
    if not issubclass(obj, interface):
        raise _fail(
            ctx,
            path,
            f"{obj.__qualname__} does not derive from "
            f"{interface.__module__}.{interface.__qualname__}",
            interface=True,
        )
    return obj
