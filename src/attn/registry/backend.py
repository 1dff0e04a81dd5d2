"""The base class every backend class of every registry derives from."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: typing stays off the warm path

if TYPE_CHECKING:
    from typing import ClassVar

__all__ = ["Backend"]


class Backend:
    """A backend: a class a registry hands out by name.

    Subclasses say which third-party packages their kernel needs in
    :attr:`requires`; :meth:`is_available` checks that those are installed
    without importing them, so listing stays cheap and a backend whose kernel
    library is missing still imports and explains itself.
    """

    requires: ClassVar[tuple[str, ...]] = ()
    """Distribution names of the packages the kernel needs (``"flash-attn"``)."""

    requires_modules: ClassVar[tuple[str, ...] | None] = None
    """Top-level import names of :attr:`requires`, in the same order.

    ``None`` derives them from the distribution names (``flash-attn`` ->
    ``flash_attn``); set it where they differ (``flashinfer-python`` ->
    ``flashinfer``).
    """

    @classmethod
    def get_name(cls) -> str:
        """The backend's display name; the class name unless overridden."""
        return cls.__name__

    @classmethod
    def missing_requirements(cls) -> tuple[str, ...]:
        """The entries of :attr:`requires` that are not installed."""
        from importlib.util import find_spec  # noqa: PLC0415 - only listing needs it

        modules = cls.requires_modules
        if modules is None:
            modules = tuple(name.replace("-", "_").replace(".", "_") for name in cls.requires)
        missing = []
        for dist, module in zip(cls.requires, modules, strict=True):
            top = module.split(".", 1)[0]
            try:
                found = find_spec(top) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(dist)
        return tuple(missing)

    @classmethod
    def is_available(cls) -> bool:
        """Whether every package in :attr:`requires` is installed (nothing is imported)."""
        return not cls.missing_requirements()
