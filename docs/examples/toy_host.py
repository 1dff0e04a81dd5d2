"""A toy host with its own attn registry, and a plugin for it, end to end.

Run it with the interpreter attn is installed in::

    python docs/examples/toy_host.py

It declares ``ToyBackendEnum`` (entry-point group ``toy.backends``, host
distribution ``toy``), writes a throwaway site folder holding an installed
``toy`` and a plugin distribution ``toy-turbo``, and shows what the host gets:
lookups, errors, runtime registration, discovery, the ``TOY_*`` controls, the
listing records, and the testing helpers. Every ``assert`` is a claim made in
docs/host-authors.md.
"""

# An example prints and asserts what it shows, and is not part of a package.
# ruff: noqa: S101, T201, INP001, PLR2004, PT017

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, overload

import attn
from attn.registry import (
    Backend,
    BackendEnum,
    BackendNotRegisteredError,
    InvalidPathError,
    PluginBackend,
    PluginProblemError,
    build_report,
    register,
)

if TYPE_CHECKING:
    from collections.abc import Callable

# -- the host: an interface, built-in backends, the registry, a register function


class ToyBackend(Backend):
    """What every toy backend provides."""

    speed: ClassVar[int] = 1

    @classmethod
    def run(cls, text: str) -> str:
        """Process *text* (the built-in does nothing)."""
        return text


class SlowBackend(ToyBackend):
    """The built-in default of ``SLOW``."""


class FastBackend(ToyBackend):
    """The built-in default of ``FAST``; its kernel needs numpy."""

    speed = 10
    requires = ("numpy",)


class ToyBackendEnum(
    BackendEnum,
    group="toy.backends",
    host="toy",
    interface=ToyBackend,
    noun="toy backend",
    register_hint="toy.register_toy_backend(ToyBackendEnum.NAME, 'module:Class')",
):
    """The toy host's backends: built-ins here, plugins from ``toy.backends``."""

    SLOW = "__main__:SlowBackend"
    FAST = "__main__:FastBackend"
    CUSTOM = None


@overload
def register_toy_backend(
    backend: ToyBackendEnum | PluginBackend[ToyBackend], class_path: None = None
) -> Callable[[type], type]: ...
@overload
def register_toy_backend(
    backend: ToyBackendEnum | PluginBackend[ToyBackend], class_path: str
) -> Callable[[type], type]: ...
def register_toy_backend(
    backend: ToyBackendEnum | PluginBackend[ToyBackend], class_path: str | None = None
) -> Callable[[type], type]:
    """Register a toy backend at runtime: a decorator, or a direct call with a path."""
    return register(backend, class_path)


# -- an installed host and a plugin, as pip would leave them -------------------


def write_dist(site: Path, name: str, version: str, requires: list[str], eps: str = "") -> None:
    """Write ``NAME-VERSION.dist-info`` with METADATA and, if given, entry_points.txt."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if eps:
        (info / "entry_points.txt").write_text(textwrap.dedent(eps), encoding="utf-8")


def make_site(root: Path) -> None:
    """The host ``toy`` 1.2.0, the plugin ``toy-turbo``, and a plugin for a newer toy."""
    write_dist(root, "toy", "1.2.0", [])
    write_dist(
        root,
        "toy-turbo",
        "0.3.0",
        ["toy>=1.0"],
        """\
        [toy.backends]
        FAST = toy_turbo:TurboBackend
        TURBO = toy_turbo:TurboBackend
        """,
    )
    write_dist(
        root,
        "toy-future",
        "2.0.0",
        ["toy>=2.0"],
        """\
        [toy.backends]
        FUTURE = toy_future:FutureBackend
        """,
    )
    (root / "toy_turbo.py").write_text(
        textwrap.dedent(
            """\
            from __main__ import ToyBackend

            class TurboBackend(ToyBackend):
                speed = 100
            """
        ),
        encoding="utf-8",
    )


def main() -> None:  # noqa: PLR0915 - a tour, one claim after another
    """Walk through everything a host gets from its registry."""
    with tempfile.TemporaryDirectory() as tmp:
        make_site(Path(tmp))
        sys.path.insert(0, tmp)
        importlib.invalidate_caches()

        # Nothing is scanned until the registry is used: no merge, so no warning yet.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert ToyBackendEnum.SLOW.value == "__main__:SlowBackend"  # attribute access
            assert [m.name for m in ToyBackendEnum] == ["SLOW", "FAST", "CUSTOM"]
        assert caught == []

        # Lookups: built-ins, overridden built-ins, plugin-added names. The
        # first one merges the plugins and warns about the rejected one.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert ToyBackendEnum["SLOW"].get_class() is SlowBackend
        assert [w.category for w in caught] == [attn.RejectedPluginWarning]
        assert "'FUTURE' from toy-future 2.0.0" in str(caught[0].message)
        fast = ToyBackendEnum["FAST"]
        assert fast.is_overridden()
        assert fast.get_path() == "toy_turbo.TurboBackend"
        turbo: object = ToyBackendEnum["TURBO"]  # type checkers see a member here
        assert isinstance(turbo, PluginBackend)
        again: object = ToyBackendEnum["TURBO"]
        assert turbo is again  # the same object until refresh()
        assert turbo.get_class().speed == 100
        print(repr(turbo))

        # Errors: unknown names, a member without a default.
        try:
            ToyBackendEnum["FUTURE"]
        except attn.UnknownBackendError as exc:
            assert isinstance(exc, ValueError)
            print(exc)
        try:
            ToyBackendEnum.CUSTOM.get_path()
        except BackendNotRegisteredError as exc:
            print(exc)

        # Runtime registration, on top of plugins; clear_override() drops it.
        # The decorator records module:qualname, so a class defined inside a
        # function (qualname with <locals>) is refused: it cannot be imported.
        try:

            @register_toy_backend(ToyBackendEnum.CUSTOM)
            class LocalBackend(ToyBackend):
                """Not importable by path."""

        except InvalidPathError as exc:
            print(exc)
        register_toy_backend(ToyBackendEnum.CUSTOM, "__main__:SlowBackend")
        assert ToyBackendEnum.CUSTOM.get_class() is SlowBackend
        register_toy_backend(turbo, "__main__.FastBackend")
        assert turbo.is_overridden()
        assert turbo.get_class() is FastBackend

        ToyBackendEnum.CUSTOM.clear_override()
        assert not ToyBackendEnum.CUSTOM.is_overridden()

        # Listing records: what `attn list` renders, for your own command.
        report = build_report(ToyBackendEnum)
        for row in report.backends:
            print(f"{row.name:8} {row.origin:8} {row.status:13} {row.path}")
        for plugin in report.plugins:
            print(f"plugin {plugin.name} from {plugin.origin_label}: {plugin.status}")
            if plugin.reason:
                print(f"  {plugin.reason}")
        assert report.to_json()["group"] == "toy.backends"

        # Controls: TOY_DISABLE_PLUGINS, TOY_PLUGINS, TOY_STRICT.
        os.environ["TOY_DISABLE_PLUGINS"] = "1"
        ToyBackendEnum.refresh()
        assert not ToyBackendEnum.FAST.is_overridden()
        assert ToyBackendEnum["TURBO"].get_class() is FastBackend  # runtime entries survive
        del os.environ["TOY_DISABLE_PLUGINS"]

        os.environ["TOY_STRICT"] = "1"
        try:
            ToyBackendEnum.refresh()
        except PluginProblemError as exc:
            print(exc.problems[0])
        del os.environ["TOY_STRICT"]

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ToyBackendEnum.refresh()
            assert ToyBackendEnum["FAST"].get_path() == "toy_turbo.TurboBackend"
        # One plugin per name here (no ConflictWarning); the rejected one warns at each merge.
        assert [w.category for w in caught] == [attn.RejectedPluginWarning]
        sys.path.remove(tmp)
    print("ok")


if __name__ == "__main__":
    main()
