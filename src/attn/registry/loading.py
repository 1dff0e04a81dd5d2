"""Importing a backend's class by path and checking it against the interface.

Importing a plugin runs someone else's code. Whatever that code raises,
``SystemExit`` and a plugin's own ``BaseException`` subclasses included,
becomes a :class:`~attn.registry.errors.BackendLoadError` naming the backend
and its distribution; only ``KeyboardInterrupt`` and ``GeneratorExit`` pass
through, as the user or the interpreter asked for them. Objects that fail
even to describe themselves (a ``__repr__``, ``__class__`` or ``__qualname__``
that raises) are load failures too.
"""

from __future__ import annotations

import importlib
from _thread import _local  # threading.local, without importing threading

from ._records import Record, final, set_field
from .errors import BackendInterfaceError, BackendLoadError

# Not typing.TYPE_CHECKING: the commands do not import typing at run time.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from .paths import ClassPath

__all__ = ["LoadContext", "describe", "load_class", "loading_now", "passes_through"]

#: Exceptions that plugin code may raise through attn: the user's Ctrl-C and
#: the interpreter's closing of a generator.
_PASS_THROUGH = (KeyboardInterrupt, GeneratorExit)


def passes_through(exc: BaseException) -> bool:
    """Whether *exc* must propagate rather than become a load failure."""
    return isinstance(exc, _PASS_THROUGH)


def describe(exc: BaseException) -> str:
    """``Type: message`` of *exc*, even when its ``__str__`` raises."""
    try:
        name = type(exc).__name__
    except Exception:  # noqa: BLE001 - a hostile metaclass
        name = "exception"
    if isinstance(exc, SystemExit):
        return f"{name}: plugin code tried to exit the process (exit code {_shown(exc.code)})"
    try:
        text = str(exc)
    except Exception as inner:  # noqa: BLE001 - plugin code can break even str()
        return f"{name} (its message cannot be shown: str() raised {type(inner).__name__})"
    return f"{name}: {text}" if text else name


def _shown(value: object, width: int = 60) -> str:
    """``repr(value)`` cut to *width*, or a note when the object's ``__repr__`` raises."""
    try:
        return f"{value!r:.{width}}"
    except Exception:  # noqa: BLE001 - plugin objects can break even repr()
        return "(its repr() raises)"


@final
class LoadContext(Record):
    """Who a path belongs to, so a failure can say so."""

    __slots__ = ("backend", "distribution", "fix", "noun", "registry", "source", "version")

    backend: str
    registry: str
    noun: str
    source: str
    """How messages name where the path came from, e.g. ``acc-foo 1.0``."""
    fix: str
    distribution: str | None
    version: str | None

    def __init__(  # noqa: PLR0917 - one argument per field
        self,
        backend: str,
        registry: str,
        noun: str,
        source: str,
        fix: str,
        distribution: str | None = None,
        version: str | None = None,
    ) -> None:
        """Hold who a path belongs to."""
        set_field(self, "backend", backend)
        set_field(self, "registry", registry)
        set_field(self, "noun", noun)
        set_field(self, "source", source)
        set_field(self, "fix", fix)
        set_field(self, "distribution", distribution)
        set_field(self, "version", version)


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


_LOADING = _local()


def loading_now() -> LoadContext | None:
    """The plugin whose module this thread is importing now, if any."""
    stack: list[LoadContext] = getattr(_LOADING, "stack", [])
    return stack[-1] if stack else None


def _import(path: ClassPath, ctx: LoadContext) -> object:
    stack: list[LoadContext] = _LOADING.__dict__.setdefault("stack", [])
    stack.append(ctx)
    try:
        obj: object = importlib.import_module(path.module)
        for part in path.qualname.split("."):
            obj = getattr(obj, part)
    finally:
        stack.pop()
    return obj


def _import_failure(exc: BaseException, path: ClassPath, ctx: LoadContext) -> str:
    """What went wrong, in one sentence, for the error's detail."""
    if isinstance(exc, BackendLoadError):
        # The module asked attn for another backend while it was imported and
        # that failed: say so once instead of nesting the whole message.
        return f"importing it loads {exc.backend!r}, which fails: {exc.detail}"
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        missing = exc.name
        own = path.module == missing or path.module.startswith(missing + ".")
        if not own and ctx.distribution is not None:
            return (
                f"missing dependency {missing!r} of {ctx.distribution} "
                f"(ModuleNotFoundError: {describe(exc).split(': ', 1)[-1]}); install it, "
                f"or reinstall {ctx.distribution} with its dependencies"
            )
    return describe(exc)


def _check_class(obj: object, path: ClassPath, interface: type) -> str | None:
    """Why *obj* is not a backend class of *interface*, or ``None`` when it is one."""
    if not isinstance(obj, type):
        return f"{path.colon!r} is not a class but {type(obj).__name__} {_shown(obj)}"
    if not issubclass(obj, interface):
        try:
            name = str(obj.__qualname__)
        except Exception:  # noqa: BLE001 - a metaclass whose __qualname__ raises
            name = path.qualname
        return f"{name} does not derive from {interface.__module__}.{interface.__qualname__}"
    return None


def load_class(path: ClassPath, interface: type, ctx: LoadContext) -> type:
    """Import *path* and return the class, which must derive from *interface*.

    Raises:
        BackendLoadError: the module or attribute cannot be imported, or the
            code run by importing it raised anything but ``KeyboardInterrupt``
            or ``GeneratorExit``; the original exception is chained as
            ``__cause__``.
        BackendInterfaceError: the object is not a subclass of *interface*.
    """
    try:
        obj = _import(path, ctx)
    except BaseException as exc:
        if passes_through(exc):
            raise
        raise _fail(ctx, path, _import_failure(exc, path, ctx)) from exc
    try:
        problem = _check_class(obj, path, interface)
    except BaseException as exc:
        if passes_through(exc):
            raise
        problem = f"checking {path.colon!r} against the interface raised {describe(exc)}"
        raise _fail(ctx, path, problem, interface=True) from exc
    if problem is not None:
        raise _fail(ctx, path, problem, interface=True)
    return obj  # type: ignore[return-value]
