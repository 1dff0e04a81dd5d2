"""Fixtures shared by the whole suite.

Plugins in unit tests are real: :class:`Sites` writes ``*.dist-info`` folders
(``METADATA``, ``entry_points.txt``) and plugin modules into ``tmp_path`` and
puts those folders on ``sys.path``, so discovery reads them through
``importlib.metadata`` exactly as it reads an installed wheel.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

import attn
from attn.registry import state_of

ATTN_VARIABLES = ("ATTN_DISABLE_PLUGINS", "ATTN_PLUGINS", "ATTN_STRICT")


#: The module ``plug.mod`` that the ``plugin_module`` fixture writes.
PLUGIN_SOURCE = '''\
from attn import AttentionBackend, MLAPrefillBackend


class Backend(AttentionBackend):
    """An attention backend shipped by a plugin."""


class Other(AttentionBackend):
    """A second attention backend in the same module."""


class Outer:
    class Inner(AttentionBackend):
        """A nested backend class."""


class Prefill(MLAPrefillBackend):
    """An MLA prefill backend shipped by a plugin."""


class NotABackend:
    """A class that derives from neither interface."""


not_a_class = 3
'''


class Site:
    """One ``sys.path`` entry holding distributions written for a test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def dist(
        self,
        name: str,
        version: str | None = "1.0",
        *,
        entry_points: Mapping[str, Mapping[str, str]] | None = None,
        requires: Sequence[str] = ("attn>=0.1",),
        folder: str | None = None,
        metadata: bool = True,
        raw_entry_points: str | None = None,
    ) -> Path:
        """Write a distribution's metadata folder and return it."""
        stem = name.replace("-", "_")
        info = self.root / (folder or f"{stem}-{version or '0'}.dist-info")
        info.mkdir(parents=True)
        if metadata:
            lines = ["Metadata-Version: 2.1", f"Name: {name}"]
            if version is not None:
                lines.append(f"Version: {version}")
            lines += [f"Requires-Dist: {r}" for r in requires]
            (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
        text = raw_entry_points
        if text is None and entry_points:
            text = "".join(
                f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
                for group, eps in entry_points.items()
            )
        if text is not None:
            (info / "entry_points.txt").write_text(text, encoding="utf-8")
        importlib.invalidate_caches()
        return info

    def module(self, dotted: str, source: str) -> Path:
        """Write the module *dotted* (packages created as needed)."""
        parts = dotted.split(".")
        folder = self.root.joinpath(*parts[:-1])
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(1, len(parts)):
            init = self.root.joinpath(*parts[:i], "__init__.py")
            if not init.exists():
                init.write_text("", encoding="utf-8")
        path = folder / f"{parts[-1]}.py"
        path.write_text(source, encoding="utf-8")
        importlib.invalidate_caches()
        return path


class Sites:
    """Creates :class:`Site` folders; the first created is first on ``sys.path``."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self._tmp = tmp_path
        self._count = 0
        self._monkeypatch = monkeypatch

    def new(self, label: str = "site") -> Site:
        site = Site(self._tmp / f"{self._count}-{label}")
        self._monkeypatch.syspath_prepend(str(site.root))
        # syspath_prepend puts it first; move it after the sites made before it.
        sys.path.remove(str(site.root))
        sys.path.insert(self._count, str(site.root))
        self._count += 1
        return site


@pytest.fixture
def sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Sites:
    """Factory of sys.path entries to write distributions into."""
    return Sites(tmp_path, monkeypatch)


@pytest.fixture
def site(sites: Sites) -> Site:
    """One sys.path entry, first on sys.path."""
    return sites.new()


@pytest.fixture(autouse=True)
def _clean_registries(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Every test starts with undiscovered registries, no ATTN_* variables and no stray modules."""
    for name in ATTN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    registries = (attn.AttentionBackendEnum, attn.MLAPrefillBackendEnum)
    for registry in registries:
        state_of(registry).reset()
    yield
    for registry in registries:
        state_of(registry).reset()
    # Plugin modules written by a test must not leak into the next one.
    base = str(tmp_path_factory.getbasetemp())
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(base):
            del sys.modules[name]
    importlib.invalidate_caches()


@pytest.fixture
def plugin_source() -> str:
    """Source of a plugin module with a few backend classes (and a few non-backends)."""
    return PLUGIN_SOURCE


@pytest.fixture
def plugin_module(site: Site) -> Site:
    """The first site, holding the module ``plug.mod`` written from :data:`PLUGIN_SOURCE`."""
    site.module("plug.mod", PLUGIN_SOURCE)
    return site
