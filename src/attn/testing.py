"""A pytest plugin (``pytest -p attn.testing``): fake plugins and conformance checks."""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import ClassVar, NoReturn

import pytest
from packaging.version import VERSION_PATTERN

from attn.registry.controls import TESTING_SITES_VARIABLE, canonical_name
from attn.registry.enum import ON_DECLARE, BackendEnumMeta, declared_registries, state_of
from attn.registry.errors import describe, parse_path
from attn.registry.loading import Backend, attribute, import_names, interface_of, missing_of

__all__ = ["AttnPlugins", "BackendConformance", "attn_plugins"]

_DISTRIBUTION_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])\Z", re.IGNORECASE)
_VERSION = re.compile(VERSION_PATTERN, re.VERBOSE | re.IGNORECASE).fullmatch
_EP_NAME = re.compile(r"[^\s=#;\[](?:[^=]*[^\s=])?").fullmatch  # as entry_points.txt keeps it


class AttnPlugins:
    """What the ``attn_plugins`` fixture gives a test: add fake plugins, include installed ones."""

    def __init__(self, root: Path) -> None:
        """Use *root* (an empty folder, already first on ``sys.path``) for the fakes."""
        self.root, self._include_installed, self._added = root, False, dict[str, Path]()

    @property
    def include_installed(self) -> bool:
        """Whether installed plugins are discovered too (default no); setting it refreshes."""
        return self._include_installed

    @include_installed.setter
    def include_installed(self, value: bool) -> None:
        self._include_installed = bool(value)
        self.refresh()

    def add(
        self,
        distribution: str,
        entry_points: Mapping[str, Mapping[str, str]],
        *,
        version: str = "1.0",
        requires: Sequence[str] = ("attn",),
        files: Mapping[str, str] | None = None,
    ) -> Path:
        """Install a fake plugin distribution and refresh every registry; return its dist-info.

        *entry_points* is ``{group: {backend name: "module:QualName"}}``, *files*
        ``{relative path: source text}`` (written beside the metadata). An argument pip or attn
        could not take as given is a `ValueError` (`TypeError`: a wrong type, or *requires* a str).
        """
        if isinstance(requires, str):
            raise TypeError(f"requires={requires!r} is one string: pass ({requires!r},)")
        groups = entry_points.values() if isinstance(entry_points, Mapping) else [entry_points]
        if not all(isinstance(eps, Mapping) for eps in groups):
            raise TypeError(f"entry_points={entry_points!r} is not {{group: {{name: 'm:Class'}}}}")
        given = [(group, n, v) for group, eps in entry_points.items() for n, v in eps.items()]
        lines = [distribution, *requires, *entry_points, *(t for e in given for t in e[1:])]
        if broken := next((t for t in map(str, lines) if "".join(t.splitlines()) != t), None):
            msg = f"{broken!r} has a line break; a fake plugin's metadata takes one line per field"
            raise ValueError(msg)
        if not (isinstance(distribution, str) and _DISTRIBUTION_NAME.match(distribution)):
            msg = f"distribution={distribution!r} is not a name pip installs: e.g. 'vendor-fast'"
            raise (ValueError if isinstance(distribution, str) else TypeError)(msg)
        if not (isinstance(version, str) and _VERSION(version)):
            msg = f"version={version!r} is not a version pip installs: e.g. '2.0rc1'"
            raise (ValueError if isinstance(version, str) else TypeError)(msg)
        if bad := [(g, n) for g, n, _ in given if not (isinstance(n, str) and _EP_NAME(n))]:
            msg = "entry_points[{!r}] has {!r}, which entry_points.txt cannot hold (no '=', no"
            raise ValueError(msg.format(*bad[0]) + " space at an end, nor '#', ';' or '[' first)")
        if (key := canonical_name(distribution)) in self._added:  # Vendor_A is vendor-a
            msg = f"{distribution!r} was already added in this test (at {self._added[key]})"
            raise ValueError(msg + "; give the second plugin another name")
        # As wheels name the folder: runs of -_. become one underscore.
        info = self.root / f"{re.sub(r'[-_.]+', '_', distribution)}-{version}.dist-info"
        head = f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
        written = {
            "METADATA": head + "".join(f"Requires-Dist: {r}\n" for r in requires),
            "entry_points.txt": "".join(
                f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in eps.items()) + "\n"
                for group, eps in entry_points.items()
            ),
        }
        record = [*(files or {}), *(f"{info.name}/{name}" for name in [*written, "RECORD"])]
        written["RECORD"] = "".join(f"{path},,\n" for path in record)
        _write(self.root, {**(files or {}), **{f"{info.name}/{n}": t for n, t in written.items()}})
        self._added[key] = info
        if {"attn.backends", "attn.mla_prefill_backends"}.intersection(entry_points):
            import attn.backends  # noqa: F401, PLC0415 - declared, so subprocesses see fakes only
        self.refresh()
        return info

    def refresh(self) -> None:
        """Make every registry discover again at its next access (within the test, lazily)."""
        importlib.invalidate_caches()
        for registry in declared_registries():
            self._isolate(registry)
            state_of(registry).invalidate()

    def _isolate(self, registry: BackendEnumMeta) -> None:
        """Point *registry*'s host at the fakes (or all), here and in subprocesses; no cache."""
        sites = TESTING_SITES_VARIABLE.format(prefix=registry.env_prefix)
        os.environ.pop(sites, None)
        if not self._include_installed:
            os.environ[sites] = str(self.root)
        os.environ[f"{registry.env_prefix}_NO_CACHE"] = "1"


def _write(root: Path, files: Mapping[str, str]) -> None:
    try:  # outside the folder, a NUL byte, the folder itself, a name too long: the reason
        for path, text in files.items():
            (target := (root / path).resolve()).relative_to(root.resolve())
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except (OSError, ValueError) as exc:
        msg = f"files: {path!r} must be a relative path inside the plugin's folder"
        raise ValueError(f"{msg}, of a file it can write ({describe(exc)})") from exc


@pytest.fixture
def attn_plugins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AttnPlugins]:
    """Fake plugin distributions, with installed plugins left out, all undone after the test."""
    saved_env, saved_path = dict(os.environ), list(sys.path)  # for registries declared in it too
    snapshots = {r: state_of(r).snapshot() for r in declared_registries()}
    root = tmp_path_factory.mktemp("attn_plugins")
    sys.path.insert(0, str(root))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.getenv("PYTHONPATH")]))
    if not declared_registries():  # a suite of no host of its own tests attn's registries
        import attn.backends  # noqa: F401, PLC0415 - declared, so subprocesses see fakes only
    (plugins := AttnPlugins(root)).refresh()
    ON_DECLARE.append(isolate := plugins._isolate)  # noqa: SLF001 - one declared in the test too
    try:
        yield plugins
    finally:
        ON_DECLARE.remove(isolate)
        for name, module in sorted(sys.modules.items(), reverse=True):  # parents after children
            where = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or ())]
            if any(str(w).startswith(str(root)) for w in where):
                del sys.modules[name]
        sys.path[:] = saved_path
        # Every host's variables, and _<PREFIX>_ ones (the kit's own isolation among them).
        prefixes = {"ATTN", *(r.env_prefix for r in declared_registries())}
        heads = tuple(f"{u}{prefix}_" for prefix in prefixes for u in ("", "_"))
        owned = [k for k in {*os.environ, *saved_env} if k == "PYTHONPATH" or k.startswith(heads)]
        for name in owned:
            os.environ.pop(name, None)
        os.environ.update((name, saved_env[name]) for name in owned if name in saved_env)
        importlib.invalidate_caches()
        for registry in declared_registries():  # reset if declared during the test
            state, snapshot = state_of(registry), snapshots.get(registry)
            state.reset() if snapshot is None else state.restore(snapshot)


def _fail(message: str) -> NoReturn:
    pytest.fail(message, pytrace=False)


def _requires(cls: type) -> tuple[str, ...]:
    """*cls*'s requires, once it is a tuple (else each check that reads it fails saying so)."""
    if not isinstance(requires := getattr(cls, "requires", ()), tuple):
        msg = f"{cls.__qualname__}.requires is {requires!r}: make it a tuple of the distribution"
        _fail(f"{msg} names the kernel needs, e.g. ('flash-attn',)")
    return requires


def _modules(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """*cls*'s requires and import names, once they fit (else each check reading them fails)."""
    requires, given = _requires(cls), getattr(cls, "requires_modules", None)
    if given is not None and not (isinstance(given, tuple) and len(given) == len(requires)):
        msg = f"{cls.__qualname__}.requires_modules is {given!r} for requires {requires!r}"
        _fail(f"{msg}: give one import name per distribution, in the same order")
    modules = import_names(cls) if issubclass(cls, Backend) and requires else ()
    if bad := [m for m in modules if not all(map(str.isidentifier, m.split(".")))]:
        head = cls.__qualname__ + ("" if given is None else ".requires_modules")
        msg = f"{head}: {', '.join(map(repr, bad))} is not an import name: list bare names in"
        _fail(f"{msg} requires, and in requires_modules the names they import as")
    return requires, modules


def _call(cls: type, method: str, **settings: object) -> object:
    try:
        return getattr(cls, method)(**settings)
    except TypeError as exc:  # a forgotten @classmethod, or a check that takes no **settings
        if exc.__traceback__ is not None and exc.__traceback__.tb_next is not None:
            raise  # raised inside the method, not by calling it: its own traceback says where
        msg = f"{cls.__qualname__}.{method}() raised {describe(exc)}: declare it as a @classmethod"
        _fail(f"{msg} (hosts call it on the class) that accepts the keyword arguments it is given")


class BackendConformance:
    """Base of a test class checking one backend class: set ``backend_class`` and ``registry``."""

    backend_class: ClassVar[type | str]
    """The backend class, or its path (``module:QualName``)."""
    registry: ClassVar[type]
    """The registry the backend is for, e.g. `attn.AttentionBackendEnum`."""

    def _backend(self) -> type:
        if (target := getattr(self, "backend_class", None)) is None:
            msg = f"{type(self).__name__} does not set backend_class"
            _fail(f"{msg}: set it to the class or its 'module:QualName' path")
        path = None
        try:
            cls = target if isinstance(target, type) else attribute(path := parse_path(target))
        except Exception as exc:  # noqa: BLE001 - any failure to import it is the finding
            fix = "its module raised it as it was imported: fix the module or the class"
            gone = exc.name if isinstance(exc, ModuleNotFoundError) else None  # which module
            if not path or path.module in sys.modules or f"{path.module}.".startswith(f"{gone}."):
                fix = "set it to the class's 'module:QualName' path, and make its module importable"
            _fail(f"backend_class {target!r} cannot be imported: {describe(exc)}: {fix}")
        if not isinstance(cls, type):
            _fail(f"backend_class {target!r} names {cls!r}, which is not a class")
        return cls

    def _derived(self) -> type:
        """The backend class, once it derives from the interface (else the failure says so)."""
        cls, interface = self._backend(), self._interface()
        if interface not in cls.__mro__ and not issubclass(cls, interface):  # a Protocol's too
            fits = []  # (closeness, order, name) of the registries it fits
            for order, registry in enumerate(declared_registries()):
                with contextlib.suppress(Exception):  # an interface that fails to import: none
                    if (base := interface_of(registry)) in cls.__mro__ or issubclass(cls, base):
                        fits.append((-len(base.__mro__), order, registry.__name__))
            fit = min(fits, default=None)
            other = f", or set registry = {fit[2]} if it is one of its backends" if fit else ""
            where = f"{interface.__module__}.{interface.__qualname__}"
            msg = f"{cls.__qualname__} does not derive from {where}: declare it as class "
            _fail(f"{msg}{cls.__name__}({interface.__qualname__}){other}")
        return cls

    def _interface(self) -> type:
        registry = getattr(self, "registry", None)
        if not isinstance(registry, BackendEnumMeta) or "_attn_state" not in registry.__dict__:
            msg = f"{type(self).__name__}.registry is {registry!r}: set it to the registry"
            _fail(f"{msg} the backend is for, e.g. attn.AttentionBackendEnum")
        return interface_of(registry)

    def test_derives_from_the_registry_interface(self) -> None:
        """The class derives from the registry's backend interface."""
        self._derived()

    def test_get_name_returns_a_non_empty_str(self) -> None:
        """``get_name()`` returns a non-empty ``str``."""
        cls = self._derived()
        if not isinstance(name := _call(cls, "get_name"), str) or not name:
            msg = f"{cls.__qualname__}.get_name() returned {name!r}: return the backend's"
            _fail(f"{msg} display name, a non-empty str (or do not override it)")

    def test_get_impl_cls_is_overridden_and_returns_a_class(self) -> None:
        """``get_impl_cls()`` is overridden and returns a class."""
        cls, interface = self._derived(), self._interface()
        if not hasattr(interface, "get_impl_cls"):
            pytest.skip(f"{interface.__qualname__} has no get_impl_cls() to override")
        if next(c for c in cls.__mro__ if "get_impl_cls" in c.__dict__) in interface.__mro__:
            msg = f"{cls.__qualname__} does not override get_impl_cls(): define a classmethod "
            msg += "get_impl_cls() that returns the class computing the backend's result"
            _fail(f"{msg} (import the kernel library inside it, not at module level)")
        try:
            impl = _call(cls, "get_impl_cls")
        except ImportError:  # its kernel, imported inside it as it should be: not installed here?
            if not (missing := missing_of(cls)):
                raise
            pytest.skip(f"{cls.__qualname__} needs {', '.join(missing)}, not installed here")
        if not isinstance(impl, type):
            msg = f"{cls.__qualname__}.get_impl_cls() returned {impl!r}, not a class"
            _fail(f"{msg}: return the implementation class itself, not an instance")

    def test_requires_is_a_tuple_of_distribution_names(self) -> None:
        """``requires`` is a tuple of valid distribution names."""
        requires = _requires(cls := self._backend())
        if bad := [r for r in requires if not (isinstance(r, str) and _DISTRIBUTION_NAME.match(r))]:
            msg = f"{cls.__qualname__}.requires has {', '.join(map(repr, bad))}, not a distribution"
            msg += " name: list names as pip installs them, without versions or extras"
            _fail(f"{msg} (e.g. 'flash-attn', not 'flash-attn>=2')")

    def test_requires_modules_match_requires(self) -> None:
        """``requires_modules`` gives one import name per entry of ``requires``."""
        requires, modules = _modules(cls := self._backend())
        for dist_name, module in zip(requires, modules, strict=False):  # () if no Backend
            try:
                dist = distribution(dist_name)
            except PackageNotFoundError:
                continue  # not installed here: nothing to compare with
            # The top-level import names it provides: top_level.txt, else its files.
            provided = set((dist.read_text("top_level.txt") or "").split()) or {
                file.parts[0].partition(".")[0]  # a package, a module, an extension module
                for file in dist.files or ()  # not bin/.., NAME.dist-info, NAME.data, NAME.libs
                if (len(file.parts) > 1 and file.parts[0].isidentifier())
                or (len(file.parts) == 1 and file.suffix in {".py", ".so", ".pyd"})
            } - {"__pycache__"}  # a module's cached bytecode, not a package
            if provided and (top := module.split(".", 1)[0]) not in provided:
                msg = f"{cls.__qualname__}: {dist_name} is installed but provides "
                msg += f"{', '.join(sorted(provided))}, not {top!r}: "
                _fail(f"{msg}set requires_modules to the import names, in the order of requires")

    def test_is_available_returns_a_bool(self) -> None:
        """``is_available()`` returns a ``bool``."""
        _modules(cls := self._derived())  # the default is_available() reads them
        if not isinstance(available := _call(cls, "is_available"), bool):
            msg = f"{cls.__qualname__}.is_available() returned {available!r}: return True or "
            msg += "False (the default checks that every package in requires is installed,"
            _fail(f"{msg} without importing it)")

    #: Settings ``test_validate_configuration_returns_a_list_of_str`` tries, one call each.
    sample_settings: ClassVar[tuple[dict[str, object], ...]] = (
        {},
        {"device": "cuda", "capability": (9, 0), "head_size": 128, "dtype": "bfloat16"},
        {"device": "cpu", "head_size": 64, "dtype": "float32", "use_mla": False},
        {"device": "rocm", "block_size": 16, "kv_cache_dtype": "fp8", "use_mla": True},
    )

    def test_validate_configuration_returns_a_list_of_str(self) -> None:
        """``validate_configuration(**settings)``, when defined, returns a list of ``str``."""
        if not hasattr(cls := self._backend(), "validate_configuration"):
            pytest.skip(f"{cls.__qualname__} declares no validate_configuration")
        samples = self.sample_settings
        if type(samples) not in (tuple, list) or not all(isinstance(s, Mapping) for s in samples):
            one = samples if isinstance(samples, Mapping) else {"device": "cuda"}
            kind = type(samples).__name__
            msg = f"{type(self).__name__}.sample_settings is {samples!r}, a {kind}: "
            _fail(f"{msg}make it a tuple of dicts, one call each, e.g. ({one!r},)")
        for settings in samples:
            said = _call(cls, "validate_configuration", **settings)
            if not isinstance(said, list) or not all(isinstance(s, str) for s in said):
                msg = f"{cls.__qualname__}.validate_configuration(**{settings!r}) returned "
                msg += f"{said!r}: return a list of str, one reason per setting it cannot run"
                _fail(f"{msg} (empty when it can), and ignore settings it does not know")

    def test_importing_the_module_imports_no_required_package(self) -> None:
        """Importing the backend's module (its path's, as attn does) imports nothing in requires."""
        cls, target = self._backend(), self.backend_class
        module = parse_path(target).module if isinstance(target, str) else cls.__module__
        tops = sorted({m.split(".", 1)[0] for m in _modules(cls)[1]})
        script = (  # sys.modules is read first: a package the check imports cannot hide behind it
            f"import os, sys\nbefore = set(sys.modules)\n__import__({module!r})\nprint('\\n' + "
            f"','.join(m for m in {tops!r} if m in sys.modules and m not in before), flush=True)\n"
            "os._exit(0)  # the answer stays the last line: no output at exit after it\n"
        )
        paths = (p for p in sys.path if isinstance(p, str) and p)  # Python searches no Path
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        argv = [sys.executable, "-c", script]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)  # noqa: S603 - this interpreter, a fixed script
        if done.returncode != 0:
            _fail(f"importing {module} in a fresh interpreter failed:\n{done.stderr}")
        if imported := [m for m in done.stdout.splitlines()[-1].split(",") if m]:
            _fail(
                f"importing {module} imports {', '.join(imported)}: import kernel packages inside "
                "methods (get_impl_cls, the implementation), never at module level, so that "
                "listing and selecting backends stay cheap and work where the package is missing"
            )
