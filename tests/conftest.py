"""Fixtures shared by the whole suite.

Plugins in unit tests are real: :class:`Sites` writes ``*.dist-info`` folders
(``METADATA``, ``entry_points.txt``) and plugin modules into ``tmp_path`` and
puts those folders on ``sys.path``, so discovery reads them through
``importlib.metadata`` exactly as it reads an installed wheel.

Every test runs isolated from the machine (the autouse ``_isolated`` fixture):
``sys.path`` holds only the test's own sites, the site-packages of a session
virtualenv linking attn, pytest and what they require, and the standard
library, so whatever else is installed (example plugins, triton, torch) cannot
change a result. ``sys.executable`` is that virtualenv's interpreter, so
subprocesses see the same; the ``python`` fixture also passes the test's sites
on. Every ``ATTN_*`` variable is cleared, the discovery cache lives in the
test's temporary folder, and the terminal is 80 columns wide.
"""

from __future__ import annotations

import gc
import importlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import sysconfig
import venv
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import Distribution, distribution
from pathlib import Path

import pytest

import attn
from attn.registry.enum import state_of

TESTS = Path(__file__).resolve().parent

#: What a test sees installed: attn, the test runner, and (recursively) what they require.
RUNTIME = ("attn", "pytest")

#: How long any subprocess a unit test starts may run.
SUBPROCESS_TIMEOUT = 120

#: The environment every test runs in, whatever the caller's shell has set.
FIXED_VARIABLES = {"COLUMNS": "80", "LINES": "24"}

#: Variables that would change what a Python subprocess imports or prints.
_PYTHON_VARIABLES = frozenset(
    {"PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONWARNINGS", "PYTHONSAFEPATH"}
)


def _is_under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _stdlib_entries(path: Sequence[str]) -> list[str]:
    """The entries of *path* that hold the standard library (never a site-packages)."""
    stdlib = {Path(sysconfig.get_path(k)).resolve() for k in ("stdlib", "platstdlib")}
    kept = []
    for entry in path:
        real = Path(entry or os.curdir).resolve()
        if {"site-packages", "dist-packages"} & set(real.parts):
            continue
        # pythonXY.zip sits beside the stdlib folder.
        zipped = real.suffix == ".zip" and real.parent in {s.parent for s in stdlib}
        if zipped or any(_is_under(real, s) for s in stdlib):
            kept.append(entry)
    return kept


def _metadata_folder(dist: Distribution) -> Path:
    """The ``*.dist-info`` (or ``*.egg-info``) folder of an installed distribution."""
    for file in dist.files or ():
        if file.parts and file.parts[0].endswith((".dist-info", ".egg-info")):
            return Path(str(dist.locate_file(file.parts[0])))
    msg = f"cannot find the metadata folder of {dist.metadata['Name']}"
    raise RuntimeError(msg)


def _package_folder(module: str) -> Path:
    """The folder of the top-level package *module*, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        msg = f"{module} is not an installed package"
        raise RuntimeError(msg)
    return Path(next(iter(spec.submodule_search_locations)))


def _import_roots(dist: Distribution) -> set[Path]:
    """The top-level packages and modules a distribution installed (from its RECORD)."""
    roots = set()
    for file in dist.files or ():
        top = file.parts[0] if file.parts else ".."
        if len(file.parts) == 1 and file.suffix != ".py":
            continue  # a .pth file, a compiled helper, the RECORD of an egg
        if top in {"..", "__pycache__"} or top.endswith((".dist-info", ".egg-info", ".data")):
            continue
        roots.add(Path(str(dist.locate_file(top))))
    if not roots:
        # An editable install: the code is wherever its .pth file points.
        roots.add(_package_folder(dist.metadata["Name"].replace("-", "_")))
    return roots


def _with_requirements(names: Sequence[str], path: Sequence[str] = ()) -> list[Distribution]:
    """The installed distributions *names* and, recursively, what they require (on *path*)."""
    from packaging.requirements import Requirement  # noqa: PLC0415 - only for this fixture
    from packaging.utils import canonicalize_name  # noqa: PLC0415

    found: dict[str, Distribution] = {}
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        on_path = Distribution.discover(name=name, path=list(path or sys.path))
        found[name] = next(iter(on_path), None) or distribution(name)  # PackageNotFoundError
        for text in found[name].requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


#: The environment's own sys.path, before any test touched it.
_ORIGINAL_PATH = tuple(sys.path)
_ORIGINAL_EXECUTABLE = sys.executable
_STDLIB = tuple(_stdlib_entries(_ORIGINAL_PATH))


@dataclass(frozen=True)
class Runtime:
    """A virtualenv holding only what runs the suite: attn and pytest, with their requirements."""

    python: Path
    site: Path


@pytest.fixture(scope="session")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Runtime:
    """The virtualenv every test runs against, in its process and in its subprocesses.

    Its site-packages holds links to the installed code and metadata of attn,
    pytest and what they require (so an editable and a wheel install both
    work), and nothing else installed beside them: plugins, kernel libraries
    and other tools are not seen.
    """
    root = tmp_path_factory.mktemp("runtime")
    venv.EnvBuilder(symlinks=os.name != "nt", with_pip=False).create(root)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    for dist in _with_requirements(RUNTIME):
        for folder in {*_import_roots(dist), _metadata_folder(dist)}:
            (site / folder.name).symlink_to(folder, target_is_directory=folder.is_dir())
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    return Runtime(python=python, site=site)


@pytest.fixture(scope="session")
def backport(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sys.path folder holding the importlib_metadata backport (the test extra installs it).

    Importing it adds its own path finder to ``sys.meta_path``, as a host process gets it
    from the libraries that import the backport (dask among them, on Python 3.10 and 3.11).
    """
    site = tmp_path_factory.mktemp("backport")
    for dist in _with_requirements(["importlib_metadata"], list(_ORIGINAL_PATH)):
        for folder in _import_roots(dist):
            (site / folder.name).symlink_to(folder, target_is_directory=folder.is_dir())
    return site


@pytest.fixture
def with_backport(backport: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process as importing importlib_metadata leaves it: its path finder reads all metadata.

    The import appends that finder to ``sys.meta_path`` and deletes the standard path finder's
    ``find_distributions``; both are undone after the test.
    """
    path_finder = importlib.machinery.PathFinder
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(path_finder, "find_distributions", vars(path_finder)["find_distributions"])
    monkeypatch.syspath_prepend(str(backport))
    finder = importlib.import_module("importlib_metadata").MetadataPathFinder  # the first time,
    monkeypatch.delattr(path_finder, "find_distributions", raising=False)  # its import does both
    sys.meta_path[:] = [*(f for f in sys.meta_path if type(f) is not finder), finder()]
    sys.path.remove(str(backport))


@pytest.fixture(autouse=True)
def _isolated(request: pytest.FixtureRequest, tmp_path: Path, runtime: Runtime) -> Iterator[None]:
    """sys.path, sys.executable, ATTN_* variables, cache folder and terminal, fixed for one test.

    ``sys.executable`` is the runtime's interpreter, so every subprocess a test
    starts (and every subprocess those start) sees what the test sees. Not in
    integration tests: they build wheels with the environment's interpreter
    and run everything else in a throwaway virtualenv of their own.
    """
    saved_path = sys.path[:]
    # The suite's own module folders (pytest adds them as it collects): no metadata there.
    suite = [e for e in saved_path if e and _is_under(Path(e).resolve(), TESTS)]
    sys.path[:] = [*suite, str(runtime.site), *_STDLIB]
    importlib.invalidate_caches()
    with pytest.MonkeyPatch.context() as patch:
        if request.node.get_closest_marker("integration") is None:
            patch.setattr(sys, "executable", str(runtime.python))
        for name in [n for n in os.environ if n.startswith("ATTN_")]:
            patch.delenv(name)
        patch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
        for name, value in FIXED_VARIABLES.items():
            patch.setenv(name, value)
        try:
            yield
        finally:
            zipped = any(Path(entry).is_file() for entry in sys.path if isinstance(entry, str))
            sys.path[:] = saved_path
            importlib.invalidate_caches()
            if zipped:  # importlib.metadata's zip files on sys.path, which only the garbage
                # collector closes, warning (an error here) in whatever test runs then: now.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ResourceWarning)
                    gc.collect()


class IsolatedPython:
    """Runs the runtime's interpreter with the test's sites on ``PYTHONPATH``."""

    def __init__(self, cwd: Path, runtime: Runtime) -> None:
        self.cwd = cwd
        self.runtime = runtime

    def env(self) -> dict[str, str]:
        """The test's environment, with PYTHONPATH set to the test's own sys.path entries."""
        env = {k: v for k, v in os.environ.items() if k not in _PYTHON_VARIABLES}
        own = [e for e in sys.path if e and e not in _STDLIB and e != str(self.runtime.site)]
        env["PYTHONPATH"] = os.pathsep.join(own)
        return env

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``python ARGS`` and capture its output as text."""
        return subprocess.run(
            [str(self.runtime.python), *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=SUBPROCESS_TIMEOUT,
            env=self.env(),
            cwd=self.cwd,
        )


@pytest.fixture
def python(tmp_path_factory: pytest.TempPathFactory, runtime: Runtime) -> IsolatedPython:
    """A Python subprocess runner isolated like the test itself."""
    return IsolatedPython(tmp_path_factory.mktemp("cwd"), runtime)


class Environment:
    """The environment the suite runs in, whole: for a test that needs a real library (torch).

    Its code runs in a subprocess of the environment's own interpreter, so
    nothing it imports reaches the isolated tests that follow.
    """

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    def require(self, module: str) -> None:
        """Skip the test unless *module* is installed in the environment (it is not imported)."""
        if importlib.machinery.PathFinder.find_spec(module, list(_ORIGINAL_PATH)) is None:
            pytest.skip(f"{module} is not installed")

    def run(
        self, *args: str, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the environment's interpreter with *args*; it must exit 0."""
        environ = {k: v for k, v in os.environ.items() if k not in _PYTHON_VARIABLES}
        return subprocess.run(
            [_ORIGINAL_EXECUTABLE, *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=SUBPROCESS_TIMEOUT,
            env={**environ, **(env or {})},
            cwd=self.cwd,
        )


@pytest.fixture
def environment(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    """The whole environment, to run code that needs an installed library in a subprocess."""
    return Environment(tmp_path_factory.mktemp("cwd"))


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

    def __init__(self, tmp_path: Path) -> None:
        self._tmp = tmp_path
        self._count = 0

    def new(self, label: str = "site") -> Site:
        site = Site(self._tmp / f"{self._count}-{label}")
        # After the sites made before it; the _isolated fixture restores sys.path.
        sys.path.insert(self._count, str(site.root))
        importlib.invalidate_caches()
        self._count += 1
        return site


@pytest.fixture
def sites(tmp_path: Path, _isolated: None, monkeypatch: pytest.MonkeyPatch) -> Sites:
    """Factory of sys.path entries to write distributions into, inside ``sys.prefix``."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # as a virtualenv's site-packages are
    return Sites(tmp_path)


@pytest.fixture
def site(sites: Sites) -> Site:
    """One sys.path entry, first on sys.path."""
    return sites.new()


@pytest.fixture(autouse=True)
def _clean_registries(_isolated: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test starts with undiscovered registries and no stray modules."""
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


@pytest.fixture
def triton(site: Site) -> Path:
    """triton as torch installs it: entry points in its own project's group ``triton.backends``."""
    return site.dist(
        "triton",
        "3.1.0",
        requires=(),
        entry_points={
            "triton.backends": {"nvidia": "triton.backends.nvidia", "amd": "triton.backends.amd"}
        },
    )


class RecordingFinder:
    """A meta-path finder that finds nothing and records every metadata search.

    ``importlib.metadata`` asks every finder on ``sys.meta_path`` for
    distributions, and attn's fast reader hands over to it while such a finder
    is installed, so any read of installed metadata, by either reader, calls
    :meth:`find_distributions`.
    """

    def __init__(self) -> None:
        self.searches: list[object] = []

    def find_spec(self, *_args: object) -> None:
        return None

    def find_distributions(self, context: object = None) -> list[Distribution]:
        self.searches.append(context)
        return []


@pytest.fixture
def metadata_reads() -> Iterator[list[object]]:
    """Every search for installed metadata made during the test (a list, empty if none)."""
    finder = RecordingFinder()
    sys.meta_path.append(finder)
    try:
        yield finder.searches
    finally:
        sys.meta_path.remove(finder)


_ROOT = Path(__file__).resolve().parents[1]
#: The interpreter pytest runs on, with pip and hatchling (tests then run on an
#: isolated one): it installs the plugin projects that doc pages and samples need.
_INSTALLER = sys.executable


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Install a plugin project of the checkout (a path from its root) into a folder of its
    own, once per session, without its dependencies; return the folder."""
    done: dict[str, Path] = {}

    def install(project: str) -> Path:
        if project not in done:
            target = tmp_path_factory.mktemp("docs-site")
            subprocess.run(
                [
                    _INSTALLER,
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "-q",
                    "--no-deps",
                    "--no-build-isolation",
                    "--no-index",
                    "--target",
                    str(target),
                    str(_ROOT / project),
                ],
                check=True,
                capture_output=True,
                timeout=300,
            )
            done[project] = target
        return done[project]

    return install
