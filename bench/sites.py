"""The installed environments that the discovery benchmark reads.

``build_site`` writes a synthetic site: N ``*.dist-info`` folders, each beside
its package folder. ``build_realistic`` writes the same distributions in the
shapes real environments hold, laid out as pip, setuptools, hatchling and
easy_install leave them (checked against what pip 23.2, setuptools 75.8 and
hatchling 1.33 write): plain dist-infos, egg-info folders with a
``requires.txt``, egg-info files (as Debian's python3 packages install them),
a ``setup.py develop`` install (an ``.egg-link`` and a line in
``easy-install.pth``), a zipped egg, a wheel file on ``sys.path``, a folder
added by a ``.pth`` file, and the editable installs of setuptools and hatchling
(a dist-info with ``direct_url.json`` and a ``.pth`` file naming the project's
``src``). The 10 attn plugins are spread over those shapes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import zipfile
from typing import TYPE_CHECKING, Final, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

GROUP: Final = "attn.backends"
PLUGINS: Final = 10
"""Distributions in attn's group (all of them when N is smaller)."""
SCRIPTS_SHARE: Final = 0.3
PLUGIN_MODULE: Final = "class Backend:\n    pass\n"


class Dist(NamedTuple):
    """One synthetic distribution."""

    number: int
    name: str
    """The import name, also the name in file names (``synth_pkg_0042``)."""
    version: str
    requires: tuple[str, ...]
    entry_points: str
    """The text of ``entry_points.txt``; empty for none."""

    @property
    def plugin(self) -> bool:
        return self.number < PLUGINS

    @property
    def module(self) -> str:
        """The text of its package's ``__init__.py``."""
        return PLUGIN_MODULE if self.plugin else ""

    @property
    def project(self) -> str:
        """The ``Name`` of its metadata."""
        return self.name.replace("_", "-")

    @property
    def stem(self) -> str:
        return f"{self.name}-{self.version}"


def synthetic(count: int) -> list[Dist]:
    """*count* distributions: the plugins first (one overrides FLASH_ATTN), 30 % with scripts."""
    plugins = min(PLUGINS, count)
    scripts = round(count * SCRIPTS_SHARE)
    dists = []
    for index in range(count):
        plugin = index < plugins
        name = f"synth_attn_plugin_{index}" if plugin else f"synth_pkg_{index:04d}"
        if plugin:
            backend = "FLASH_ATTN" if index == 0 else f"SYNTH_ATTN_{index}"
            entry_points = f"[{GROUP}]\n{backend} = {name}:Backend\n"
        elif index < plugins + scripts:
            entry_points = f"[console_scripts]\n{name} = {name}:main\n"
        else:
            entry_points = ""
        requires = ("attn>=0.1", "numpy>=1.21") if plugin else (f"dep{index % 7}>=1.{index % 3}",)
        dists.append(Dist(index, name, f"1.{index % 10}.0", requires, entry_points))
    return dists


def metadata(dist: Dist, *, requires: bool = True, extras: bool = False) -> str:
    """``METADATA`` (or ``PKG-INFO``), with ``Requires-Dist`` lines if *requires*."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {dist.project}",
        f"Version: {dist.version}",
        f"Summary: Synthetic distribution number {dist.number}",
        "Requires-Python: >=3.10",
    ]
    if requires:
        lines += [f"Requires-Dist: {line}" for line in dist.requires]
    if requires and extras:
        lines += ["Provides-Extra: test", 'Requires-Dist: pytest>=7; extra == "test"']
    return "\n".join(lines) + "\n\n"


def package(folder: Path, dist: Dist) -> None:
    """The distribution's import package, in *folder*."""
    (folder / dist.name).mkdir(parents=True)
    (folder / dist.name / "__init__.py").write_text(dist.module, encoding="utf-8")


def write_dist_info(folder: Path, dist: Dist) -> None:
    """A ``*.dist-info`` folder (``METADATA``, an empty ``RECORD``) and the package."""
    info = folder / f"{dist.stem}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(metadata(dist), encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    if dist.entry_points:
        (info / "entry_points.txt").write_text(dist.entry_points, encoding="utf-8")
    package(folder, dist)


def build_site(root: Path, count: int) -> Path:
    """Write *count* distributions into ``root/site-N``, all dated an hour ago; return it."""
    site = root / f"site-{count}"
    site.mkdir()
    for dist in synthetic(count):
        write_dist_info(site, dist)
    age(site)
    return site


def age(folder: Path, seconds: float = 3600) -> None:
    """Date *folder* and everything in it *seconds* back, as if installed a while ago."""
    when = time.time() - seconds
    for item in [folder, *folder.rglob("*")]:
        os.utime(item, (when, when))


def _egg_info(dist: Dist, *, modern: bool) -> dict[str, str]:
    """The files of an egg-info folder (or an egg's ``EGG-INFO``), as setuptools writes them.

    *modern*: setuptools 75's ``PKG-INFO`` repeats the requirements as
    ``Requires-Dist``; older ones left them in ``requires.txt`` only.
    """
    files = {
        "PKG-INFO": metadata(dist, requires=modern, extras=modern),
        "SOURCES.txt": f"setup.py\n{dist.name}/__init__.py\n",
        "dependency_links.txt": "\n",
        "requires.txt": "\n".join(dist.requires) + "\n\n[test]\npytest>=7\n",
        "top_level.txt": f"{dist.name}\n",
    }
    if dist.entry_points:
        files["entry_points.txt"] = dist.entry_points + "\n"
    return files


def _record(files: dict[str, str], info: str) -> str:
    """A ``RECORD`` for *files* (paths relative to the site), sorted as pip writes it."""
    rows = []
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(data)}")
    rows.append(f"{info}/RECORD,,")
    return "\n".join(sorted(rows)) + "\n"


def _wheel(generator: str) -> str:
    return f"Wheel-Version: 1.0\nGenerator: {generator}\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


class Realistic:
    """Writes distributions in the shapes of real environments around one site-packages."""

    def __init__(self, root: Path, pyver: str) -> None:
        self.root = root
        self.pyver = pyver
        self.site = root / "site-packages"
        """What the benchmark adds with ``site.addsitedir``, so its ``.pth`` files run."""
        self.extra = root / "extra"
        """A folder that ``extra.pth`` adds to ``sys.path``."""
        self.projects = root / "projects"
        self.wheels = root / "wheels"
        for folder in (self.site, self.extra, self.projects, self.wheels):
            folder.mkdir(parents=True)
        self.pth: dict[str, list[str]] = {"extra.pth": [str(self.extra)]}
        """The ``.pth`` files to write into site-packages, and their lines."""

    def dist_info(self, dist: Dist) -> None:
        write_dist_info(self.site, dist)

    def pth_folder(self, dist: Dist) -> None:
        write_dist_info(self.extra, dist)

    def egg_info_folder(self, dist: Dist) -> None:
        """``setup.py install`` by an older setuptools: the requirements in ``requires.txt``."""
        info = self.site / f"{dist.stem}-py{self.pyver}.egg-info"
        info.mkdir()
        for name, text in _egg_info(dist, modern=False).items():
            (info / name).write_text(text, encoding="utf-8")
        package(self.site, dist)

    def egg_info_file(self, dist: Dist) -> None:
        """distutils' ``install_egg_info``, named as Debian installs it: PKG-INFO in one file."""
        text = metadata(dist, requires=False)
        (self.site / f"{dist.stem}.egg-info").write_text(text, encoding="utf-8")
        package(self.site, dist)

    def develop(self, dist: Dist) -> None:
        """``setup.py develop``: the project's own egg-info, an egg-link, easy-install.pth."""
        project = self.projects / dist.project
        info = project / f"{dist.name}.egg-info"
        info.mkdir(parents=True)
        (project / "setup.py").write_text("from setuptools import setup\n\nsetup()\n", "utf-8")
        for name, text in _egg_info(dist, modern=True).items():
            (info / name).write_text(text, encoding="utf-8")
        package(project, dist)
        (self.site / f"{dist.project}.egg-link").write_text(f"{project}\n.", encoding="utf-8")
        self.pth.setdefault("easy-install.pth", []).append(str(project))

    def zipped_egg(self, dist: Dist) -> None:
        """``easy_install`` of a zip-safe egg: the ``.egg`` file, named in easy-install.pth."""
        egg = f"{dist.stem}-py{self.pyver}.egg"
        files = {f"EGG-INFO/{name}": text for name, text in _egg_info(dist, modern=True).items()}
        files |= {"EGG-INFO/zip-safe": "\n", f"{dist.name}/__init__.py": dist.module}
        _zip(self.site / egg, files)
        self.pth.setdefault("easy-install.pth", []).append(f"./{egg}")

    def wheel_file(self, dist: Dist) -> None:
        """A ``.whl`` file put on ``sys.path`` (by ``wheels.pth``), imported from the zip."""
        info = f"{dist.stem}.dist-info"
        files = {
            f"{dist.name}/__init__.py": dist.module,
            f"{info}/METADATA": metadata(dist),
            f"{info}/WHEEL": _wheel("setuptools (75.8.0)"),
            f"{info}/top_level.txt": f"{dist.name}\n",
        }
        if dist.entry_points:
            files[f"{info}/entry_points.txt"] = dist.entry_points
        files[f"{info}/RECORD"] = _record(files, info)
        path = self.wheels / f"{dist.stem}-py3-none-any.whl"
        _zip(path, files)
        self.pth.setdefault("wheels.pth", []).append(str(path))

    def setuptools_editable(self, dist: Dist) -> None:
        """``pip install -e`` with setuptools >= 64 (a src layout): a static ``.pth`` file."""
        src = self.projects / dist.project / "src"
        pth = f"__editable__.{dist.stem}.pth"
        self._editable(dist, "setuptools (75.8.0)", pth, f"{src}\n", top_level=True)

    def hatchling_editable(self, dist: Dist) -> None:
        """``pip install -e`` with hatchling (through ``editables``), a src layout."""
        src = self.projects / dist.project / "src"
        pth = f"_editable_impl_{dist.name}.pth"
        self._editable(dist, "hatchling 1.33.0", pth, str(src), top_level=False)

    def _editable(
        self, dist: Dist, generator: str, pth: str, pth_text: str, *, top_level: bool
    ) -> None:
        """The project folder, and what pip installs from its editable wheel."""
        project = self.projects / dist.project
        package(project / "src", dist)
        (project / "pyproject.toml").write_text(f'[project]\nname = "{dist.project}"\n', "utf-8")
        info = f"{dist.stem}.dist-info"
        url = {"dir_info": {"editable": True}, "url": project.as_uri()}
        files = {
            pth: pth_text,
            f"{info}/INSTALLER": "pip\n",
            f"{info}/METADATA": metadata(dist),
            f"{info}/REQUESTED": "",
            f"{info}/WHEEL": _wheel(generator),
            f"{info}/direct_url.json": json.dumps(url),
        }
        if dist.entry_points:
            files[f"{info}/entry_points.txt"] = dist.entry_points
        if top_level:
            files[f"{info}/top_level.txt"] = f"{dist.name}\n"
        files[f"{info}/RECORD"] = _record(files, info)
        (self.site / info).mkdir()
        for path, text in files.items():
            (self.site / path).write_text(text, encoding="utf-8")

    def finish(self) -> None:
        """The ``.pth`` files that name the develop installs, eggs, wheels and extra folder."""
        for name, lines in self.pth.items():
            text = "".join(f"{line}\n" for line in lines)
            (self.site / name).write_text(text, encoding="utf-8")
        age(self.root)


def _zip(path: Path, files: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)


PLUGIN_SHAPES: Final[tuple[Callable[[Realistic, Dist], None], ...]] = (
    Realistic.hatchling_editable,  # the one that overrides FLASH_ATTN
    Realistic.setuptools_editable,
    Realistic.egg_info_folder,
    Realistic.develop,
    Realistic.zipped_egg,
    Realistic.wheel_file,
    Realistic.pth_folder,
    Realistic.pth_folder,
    Realistic.dist_info,
    Realistic.dist_info,
)
OTHER_SHAPES: Final[tuple[Callable[[Realistic, Dist], None], ...]] = (
    Realistic.egg_info_folder,
    Realistic.egg_info_file,
    Realistic.pth_folder,
    *[Realistic.dist_info] * 22,
)
"""Of the distributions that are not plugins, 4 % in each of three shapes."""


def build_realistic(root: Path, count: int, pyver: str) -> Path:
    """Write *count* distributions in real-world shapes under *root*; return its site-packages.

    *pyver* (``3.11``) names the eggs and egg-info folders as setuptools does.
    """
    env = Realistic(root, pyver)
    for dist in synthetic(count):
        shapes = PLUGIN_SHAPES if dist.plugin else OTHER_SHAPES
        shapes[(dist.number - (0 if dist.plugin else PLUGINS)) % len(shapes)](env, dist)
    env.finish()
    return env.site
