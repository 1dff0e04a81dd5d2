"""Backend classes: availability, class paths, loading by path and the errors of a failure."""

from __future__ import annotations

import io
import multiprocessing
import os
import sys
import threading
import warnings

import pytest

import attn
from attn import AttentionBackend, AttentionBackendEnum, AttnError, BackendLoadError
from attn.registry import (
    BackendInterfaceError,
    BackendNotRegisteredError,
    InvalidPathError,
    build_report,
)
from attn.registry.enum import state_of
from attn.registry.errors import ClassPath, parse_path
from attn.registry.loading import (
    Backend,
    LoadContext,
    load,
    load_class,
    missing_of,
    plugin_output_to,
    resolve,
    same_modules,
    try_load,
)
from attn.registry.table import Entry
from hostile import SELF_HIDING

CTX = LoadContext(
    backend="FLASH_ATTN",
    registry="AttentionBackendEnum",
    noun="attention backend",
    source="plug 1.0, entry point 'plug.mod:Backend'",
    fix="Fix or uninstall plug",
    distribution="plug",
    version="1.0",
)


def load_path(module: str, qualname: str) -> type:
    return load_class(ClassPath(module, qualname), AttentionBackend, CTX)


def test_loads_a_subclass_of_the_interface(plugin_module):
    """A class deriving from the interface is returned."""
    cls = load_path("plug.mod", "Backend")
    assert cls.__qualname__ == "Backend"
    assert issubclass(cls, AttentionBackend)


def test_loads_a_nested_class(plugin_module):
    """A dotted qualname is followed attribute by attribute."""
    assert load_path("plug.mod", "Outer.Inner").__qualname__ == "Outer.Inner"


def test_module_raising_at_import(site):
    """A module that raises at import gives a BackendLoadError (an ImportError) chaining it."""
    site.module("plug.boom", "raise RuntimeError('no GPU found')\n")
    with pytest.raises(BackendLoadError) as info:
        load_path("plug.boom", "Backend")
    error = info.value
    assert str(error) == (
        "Cannot load attention backend 'FLASH_ATTN' from plug 1.0, entry point "
        "'plug.mod:Backend' (path 'plug.boom:Backend'): RuntimeError: no GPU found. "
        "Fix or uninstall plug"
    )
    assert isinstance(error, AttnError)
    assert isinstance(error, ImportError)
    assert isinstance(error.__cause__, RuntimeError)
    assert (error.backend, error.distribution, error.version, error.path, error.detail) == (
        "FLASH_ATTN",
        "plug",
        "1.0",
        "plug.boom:Backend",
        "RuntimeError: no GPU found",
    )


def test_missing_module(site):
    """A module that does not exist chains the ModuleNotFoundError."""
    with pytest.raises(BackendLoadError) as info:
        load_path("plug_missing", "Backend")
    assert info.value.detail == "ModuleNotFoundError: No module named 'plug_missing'"
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_missing_attribute(plugin_module):
    """An attribute the module lacks chains the AttributeError."""
    with pytest.raises(BackendLoadError) as info:
        load_path("plug.mod", "Outer.Missing")
    assert info.value.detail == "AttributeError: type object 'Outer' has no attribute 'Missing'"
    assert isinstance(info.value.__cause__, AttributeError)


def test_not_a_class(plugin_module):
    """An object that is not a class is an interface error."""
    with pytest.raises(BackendInterfaceError) as info:
        load_path("plug.mod", "not_a_class")
    assert str(info.value) == (
        "Cannot load attention backend 'FLASH_ATTN' from plug 1.0, entry point "
        "'plug.mod:Backend' (path 'plug.mod:not_a_class'): 'plug.mod:not_a_class' is not a "
        "class but int 3. Fix or uninstall plug"
    )
    assert isinstance(info.value, ImportError)


def test_wrong_base_class(plugin_module):
    """A class that does not derive from the interface is an interface error."""
    with pytest.raises(BackendInterfaceError) as info:
        load_path("plug.mod", "NotABackend")
    assert info.value.detail == ("NotABackend does not derive from attn.backends.AttentionBackend")


def test_other_interface_is_refused(plugin_module):
    """A backend of one registry is refused by the other registry's interface."""
    with pytest.raises(BackendInterfaceError) as info:
        load_path("plug.mod", "Prefill")
    assert info.value.detail == "Prefill does not derive from attn.backends.AttentionBackend"


def test_keyboard_interrupt_is_not_contained(site):
    """KeyboardInterrupt raised at import goes through untouched."""
    site.module("plug.stop", "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        load_path("plug.stop", "Backend")


@pytest.mark.parametrize(
    ("source", "detail"),
    [
        ("raise SystemExit(0)", "SystemExit: its code tried to exit the process (exit code 0)"),
        (
            "import sys; sys.exit('bye')",
            "SystemExit: its code tried to exit the process (exit code 'bye')",
        ),
        ("class Stop(BaseException): pass\nraise Stop('own')", "Stop: own"),
        (
            "class Mute(Exception):\n    def __str__(self): raise ValueError\nraise Mute",
            "Mute (its message cannot be shown: str() raised ValueError)",
        ),
        (
            "class Exiting(Exception):\n    def __str__(self): raise SystemExit(4)\nraise Exiting",
            "Exiting (its message cannot be shown: str() raised SystemExit)",
        ),
        # Only the interpreter's close() of a generator may throw it, never at an import.
        ("raise GeneratorExit", "GeneratorExit"),
    ],
)
def test_plugin_exits_and_base_exceptions_are_load_failures(site, source, detail):
    """SystemExit, a plugin's BaseException subclass or an unprintable error is a load failure."""
    site.module("plug.stop", source + "\n")
    with pytest.raises(BackendLoadError) as info:
        load_path("plug.stop", "Backend")
    assert info.value.detail == detail


HOSTILE = (
    "from attn import AttentionBackend\n\n"
    + SELF_HIDING
    + """

loud = Loud()
liar = Liar()
Nameless = Meta("Nameless", (), {})
"""
)


@pytest.mark.parametrize(
    ("attr", "detail"),
    [
        ("loud", "'plug.bad:loud' is not a class but Loud (its repr() raises)"),
        ("liar", "checking 'plug.bad:liar' against the interface raised RuntimeError: class"),
        ("Nameless", "Nameless does not derive from attn.backends.AttentionBackend"),
    ],
)
def test_objects_that_cannot_describe_themselves(site, attr, detail):
    """A __repr__, __class__ or __qualname__ that raises gives an interface error, not a crash."""
    site.module("plug.bad", HOSTILE)
    with pytest.raises(BackendInterfaceError) as info:
        load_path("plug.bad", attr)
    assert info.value.detail == detail


#: A module missing at import: a dependency, or a module of the plugin's own package.
MISSING = {
    "numpy_that_is_not_here": (
        "missing dependency 'numpy_that_is_not_here' of plug (ModuleNotFoundError: No module "
        "named 'numpy_that_is_not_here'); install it, or reinstall plug with its dependencies "
        "(a kernel imported at module level: import it in methods)"
    ),
    "plug.kernels": (
        "plug's own package 'plug' has no module 'plug.kernels' (ModuleNotFoundError: No "
        "module named 'plug.kernels'); reinstall plug (pip install --force-reinstall --no-deps "
        "'plug==1.0'), or "
        "report the broken release to its authors"
    ),
}


@pytest.mark.parametrize("missing", list(MISSING))
def test_module_missing_at_import(site, missing):
    """A missing package is a dependency of the plugin; a module of its own package, its bug."""
    site.module("plug.needs", f"import {missing}\n")
    with pytest.raises(BackendLoadError) as info:
        load_path("plug.needs", "Backend")
    assert info.value.detail == MISSING[missing]


def test_missing_module_of_a_shared_namespace_package_is_a_dependency(site):
    """In a namespace package (no __init__.py), another distribution's module is a dependency."""
    (site.root / "vendor").mkdir()
    (site.root / "vendor" / "plug.py").write_text("import vendor.kernels\n", encoding="utf-8")
    with pytest.raises(BackendLoadError) as info:
        load_path("vendor.plug", "Backend")
    assert info.value.detail.startswith("missing dependency 'vendor.kernels' of plug ")


# -- load(): the one path lookups, listing and doctor take --------------------------

GROUP = "attn.backends"


@pytest.fixture
def broken(site):
    """A plugin whose module raises at import, providing BROKEN."""
    site.module("plug.boom", "raise RuntimeError('no GPU found')\n")
    site.dist("plug", entry_points={GROUP: {"BROKEN": "plug.boom:Backend"}})


@pytest.mark.parametrize("name", ["CUSTOM", "BROKEN"])
def test_load_fails_with_the_error_a_lookup_gives(broken, name):
    """load() raises what get_class() raises, type and message alike."""
    with pytest.raises(AttnError) as lookup:
        AttentionBackendEnum[name].get_class()
    with pytest.raises(type(lookup.value)) as loaded:
        load(AttentionBackendEnum, name)
    assert str(loaded.value) == str(lookup.value)


def test_load_of_a_plugin_names_its_distribution(broken):
    """A plugin's failure is worded with its distribution and entry point."""
    with pytest.raises(BackendLoadError) as info:
        load(AttentionBackendEnum, "BROKEN")
    assert str(info.value) == (
        "Cannot load attention backend 'BROKEN' from plug 1.0, entry point "
        "'plug.boom:Backend' (path 'plug.boom:Backend'): RuntimeError: no GPU found. "
        "Fix or uninstall plug, or block it with export ATTN_BLOCK_PLUGINS=plug"
    )
    assert (info.value.distribution, info.value.version) == ("plug", "1.0")


def test_the_block_fix_keeps_the_distributions_already_blocked(broken, monkeypatch):
    """ATTN_BLOCK_PLUGINS set for another plugin: the fix adds this one to it."""
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "other, plug-x")
    with pytest.raises(BackendLoadError, match=r"ATTN_BLOCK_PLUGINS=other,plug-x,plug$"):
        load(AttentionBackendEnum, "BROKEN")


def test_try_load_returns_the_failure(broken, plugin_module):
    """try_load() gives the class or the load failure, without raising it."""
    cls, error = try_load(AttentionBackendEnum, "BROKEN")
    assert cls is None
    assert isinstance(error, BackendLoadError)
    assert error.detail == "RuntimeError: no GPU found"
    assert try_load(AttentionBackendEnum, "FLASH_ATTN")[1] is None


def test_try_load_raises_what_is_not_a_load_failure():
    """An unregistered member is not a load failure: try_load() raises it."""
    with pytest.raises(BackendNotRegisteredError):
        try_load(AttentionBackendEnum, "CUSTOM")


def test_load_of_an_entry_or_the_default(plugin_module):
    """With an entry, load() imports that one; with None, the built-in default."""
    plugin_module.dist("plug", entry_points={GROUP: {"TORCH_SDPA": "plug.mod:Backend"}})
    (entry, path) = resolve(AttentionBackendEnum, "TORCH_SDPA")
    assert isinstance(entry, Entry)
    assert path == ClassPath("plug.mod", "Backend")
    assert load(AttentionBackendEnum, "TORCH_SDPA").__module__ == "plug.mod"
    assert load(AttentionBackendEnum, "TORCH_SDPA", entry).__module__ == "plug.mod"
    default = load(AttentionBackendEnum, "TORCH_SDPA", None)
    builtin = AttentionBackendEnum._attn_defaults["TORCH_SDPA"]
    assert f"{default.__module__}:{default.__qualname__}" == builtin.colon


def test_load_of_no_default_says_how_to_register(plugin_module):
    """Asking for the built-in default of CUSTOM, which has none, is the lookup's error."""
    with pytest.raises(BackendNotRegisteredError, match="has no default attention backend"):
        load(AttentionBackendEnum, "CUSTOM", None)


def test_try_load_sends_plugin_output_to_the_stream_given(site, capsys):
    """What a plugin prints at import goes to *output*, not to stdout."""
    site.module(
        "plug.loud",
        "print('hello from the plugin')\n"
        "from attn import AttentionBackend\n\n\nclass Backend(AttentionBackend):\n    pass\n",
    )
    site.dist("plug", entry_points={GROUP: {"LOUD": "plug.loud:Backend"}})
    output = io.StringIO()
    assert try_load(AttentionBackendEnum, "LOUD", output=output)[0].__name__ == "Backend"
    assert output.getvalue() == "hello from the plugin\n"
    assert capsys.readouterr().out == ""


def test_plugin_output_to_a_file_catches_file_descriptor_writes(tmp_path, capfd):
    """Writes to file descriptor 1 itself (a C extension's printf) go to a real file too.

    After the block, file descriptor 1 is stdout again (the listing printed next lands there).
    """
    with (tmp_path / "err").open("w+", encoding="utf-8") as err:
        with plugin_output_to(err):
            os.write(1, b"from C\n")
            print("from Python")  # noqa: T201 - what a plugin does
        os.write(1, b"the listing\n")
        err.seek(0)
        assert err.read() == "from C\nfrom Python\n"
    assert capfd.readouterr() == ("the listing\n", "")


def _load_in_child() -> None:
    if load_path("plug.mod", "Backend").__name__ != "Backend":
        raise SystemExit(2)


def test_a_child_forked_while_a_thread_holds_the_modules_import_lock_loads(plugin_module):
    """An imported module is taken from sys.modules, never through its import lock.

    On Python 3.10 ``importlib.import_module`` takes the module's import lock
    on every call; a child forked while another thread held it waited forever.
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    from importlib import _bootstrap  # noqa: PLC0415 - the lock import_module takes

    load_path("plug.mod", "Backend")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with _bootstrap._ModuleLockManager("plug.mod"):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(10)
        child = multiprocessing.get_context("fork").Process(target=_load_in_child)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # forking with threads
            child.start()
        child.join(20)
        if child.is_alive():  # waiting for the lock the thread held at the fork
            child.kill()
            child.join()
        assert child.exitcode == 0
    finally:
        release.set()
        thread.join(30)


@pytest.mark.parametrize(
    ("registered_by", "source"), [("host.setup", "host.setup"), (None, "unknown code")]
)
def test_a_runtime_registration_failure_names_who_registered_it(registered_by, source):
    """A runtime entry's failure names the registering module, or unknown code."""
    entry = Entry("CUSTOM", ClassPath("plug_missing", "B"), "runtime", registered_by=registered_by)
    with pytest.raises(BackendLoadError) as info:
        load(AttentionBackendEnum, "CUSTOM", entry)
    assert str(info.value).startswith(
        f"Cannot load attention backend 'CUSTOM' from a runtime registration by {source} "
        "(path 'plug_missing:B'): ModuleNotFoundError: "
    )
    assert str(info.value).endswith(
        "Register an importable attention backend with "
        "attn.register_backend(AttentionBackendEnum.CUSTOM, 'module:Class')"
    )


def test_a_runtime_registration_of_a_plugin_added_name_says_how_to_name_it():
    """A plugin-added name is no attribute: the fix looks it up by key."""
    entry = Entry("ACME_NEW", ClassPath("plug_missing", "B"), "runtime", registered_by="host")
    with pytest.raises(BackendLoadError) as info:
        load(AttentionBackendEnum, "ACME_NEW", entry)
    assert str(info.value).endswith(
        "attn.register_backend(AttentionBackendEnum['ACME_NEW'], 'module:Class')"
    )


def test_a_hint_without_a_dotted_name_names_a_plugin_added_backend(monkeypatch):
    """A host's hint such as register('NAME', ...): the name itself, never a literal NAME."""
    config = state_of(AttentionBackendEnum).config
    hint = "host.register('NAME', 'module:Class')"
    monkeypatch.setattr(
        state_of(AttentionBackendEnum), "config", config._replace(register_hint=hint)
    )
    entry = Entry("ACME_NEW", ClassPath("plug_missing", "B"), "runtime", registered_by="host")
    with pytest.raises(BackendLoadError) as info:
        load(AttentionBackendEnum, "ACME_NEW", entry)
    assert str(info.value).endswith("host.register('ACME_NEW', 'module:Class')")


def test_a_registration_plugin_code_made_gets_the_plugins_fix(monkeypatch):
    """Plugin code registered the path: the error names the plugin and how to block it."""
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "other")
    entry = Entry(
        "TORCH_SDPA",
        ClassPath("plug_missing", "B"),
        "runtime",
        registered_by="sneaky",
        plugin_distribution="sneaky-attn",
        plugin_version="1.0",
    )
    with pytest.raises(BackendLoadError) as info:
        load(AttentionBackendEnum, "TORCH_SDPA", entry)
    assert (info.value.distribution, info.value.version) == ("sneaky-attn", "1.0")
    assert str(info.value).startswith(
        "Cannot load attention backend 'TORCH_SDPA' from a runtime registration by sneaky "
        "(plugin code of sneaky-attn 1.0) (path 'plug_missing:B'): ModuleNotFoundError: "
    )
    assert str(info.value).endswith(
        "Fix or uninstall sneaky-attn, or block it with export ATTN_BLOCK_PLUGINS=other,sneaky-attn"
    )


class _Recorder:
    """A meta-path finder that records every top-level name looked for, and finds none."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, *_args: object) -> None:
        self.names.append(name)


@pytest.fixture
def recorder(monkeypatch):
    finder = _Recorder()
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    return finder


class _NeedsKernel(Backend):
    requires = ("attn-test-kernel",)


def test_each_call_looks_again_outside_a_listing(recorder):
    """A package installed between two calls is seen: nothing is remembered."""
    assert _NeedsKernel.missing_requirements() == ("attn-test-kernel",)
    assert _NeedsKernel.missing_requirements() == ("attn-test-kernel",)
    assert recorder.names.count("attn_test_kernel") == 2


def test_within_one_block_each_module_is_looked_for_once(recorder):
    """Backends sharing a kernel package cost one lookup in a listing."""
    with same_modules():
        assert _NeedsKernel.missing_requirements() == ("attn-test-kernel",)
        assert not _NeedsKernel.is_available()
        with same_modules():  # nested: the outer block's answers stay
            assert not _NeedsKernel.is_available()
    assert recorder.names.count("attn_test_kernel") == 1
    assert _NeedsKernel.missing_requirements() == ("attn-test-kernel",)
    assert recorder.names.count("attn_test_kernel") == 2


def test_a_listing_looks_for_each_kernel_package_once(recorder):
    """Several built-in backends need flash-attn; the listing asks once and says it for each."""
    report = build_report(attn.AttentionBackendEnum)
    needing = [row for row in report.backends if row.requires == ("flash-attn",)]
    assert len(needing) > 1
    assert all(row.available is False and row.missing == ("flash-attn",) for row in needing)
    assert recorder.names.count("flash_attn") == 1


def test_a_module_already_imported_is_installed(monkeypatch):
    """A kernel module in sys.modules counts, with no spec too (a test double); None does not."""
    fake = type(sys)("attn_test_kernel")
    fake.__spec__ = None  # as types.ModuleType makes it: importlib.util.find_spec raises
    monkeypatch.setitem(sys.modules, "attn_test_kernel", fake)
    assert _NeedsKernel.is_available()
    monkeypatch.setitem(sys.modules, "attn_test_kernel", None)  # its import is blocked
    assert _NeedsKernel.missing_requirements() == ("attn-test-kernel",)


def test_an_empty_import_name_is_missing():
    """A ``requires_modules`` entry that names no module: that package is missing."""

    class Empty(Backend):
        requires, requires_modules = ("kernel",), ("",)

    assert Empty.missing_requirements() == ("kernel",)


def test_a_finder_that_raises_import_error_means_missing(monkeypatch):
    """A meta-path finder raising ImportError for the kernel: that package is missing."""

    class Raising:
        def find_spec(self, name: str, *_args: object) -> None:
            if name == "attn_test_kernel":
                raise ImportError(name)

    monkeypatch.setattr(sys, "meta_path", [Raising(), *sys.meta_path])
    assert _NeedsKernel.missing_requirements() == ("attn-test-kernel",)


def test_a_class_s_own_missing_requirements_decides():
    """missing_of() asks the class's missing_requirements(), whatever its requires say."""

    class Own:
        requires = ("attn-test-kernel",)

        @classmethod
        def missing_requirements(cls) -> tuple[str, ...]:
            return ("a-driver",)

    assert missing_of(Own) == ("a-driver",)
    assert missing_of(_NeedsKernel) == ("attn-test-kernel",)
    assert missing_of(object) is None  # no requires: cannot tell


def test_blocks_in_other_threads_leave_no_memo_behind(recorder):
    """Listings in several threads at once, ending in any order, remember nothing after."""
    entered, release = threading.Barrier(4, timeout=30), threading.Event()

    def listing() -> None:
        with same_modules():
            _NeedsKernel.is_available()
            entered.wait()
            release.wait(timeout=30)

    threads = [threading.Thread(target=listing) for _ in range(3)]
    for thread in threads:
        thread.start()
    entered.wait()
    release.set()
    for thread in threads:
        thread.join(timeout=30)
    before = recorder.names.count("attn_test_kernel")
    _NeedsKernel.is_available()
    _NeedsKernel.is_available()
    assert recorder.names.count("attn_test_kernel") == before + 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"requires": "torch"},
            "Bad.requires is the string 'torch', not a tuple: write requires = ('torch',)",
        ),
        (
            {"requires": ("amd-aiter",), "requires_modules": "aiter"},
            (
                "Bad.requires_modules is the string 'aiter', not a tuple: "
                "write requires_modules = ('aiter',)"
            ),
        ),
        (
            {"requires": ("acme-kernels",), "requires_modules": ("acme_kernels", "extra")},
            (
                "Bad.requires_modules ('acme_kernels', 'extra') does not match requires "
                "('acme-kernels',): give one import name per distribution, in the same order"
            ),
        ),
        ({"requires": (5,)}, "Bad.requires and requires_modules hold str, not 5"),
        (
            {"requires": ("x",), "requires_modules": (None,)},
            "Bad.requires and requires_modules hold str, not None",
        ),
    ],
)
def test_a_wrong_requires_is_refused_when_the_class_is_defined(body, message):
    """A string, or requires_modules of another length, is a TypeError naming the class."""
    with pytest.raises(TypeError) as info:
        type("Bad", (Backend,), body)
    assert str(info.value) == message


def test_a_wrong_requires_set_later_is_refused_when_checked():
    """is_available() says the same when the attributes were changed after the class."""

    class Late(Backend):
        requires = ("acme-kernels",)

    Late.requires_modules = ("acme_kernels", "extra")
    with pytest.raises(TypeError, match=r"\.Late\.requires_modules \('acme_kernels', 'extra'\) "):
        Late.is_available()


# -- class paths: one canonical form, both forms accepted at the edges ---------------------
@pytest.mark.parametrize(
    ("text", "module", "qualname"),
    [
        ("pkg.mod:Cls", "pkg.mod", "Cls"),
        ("pkg.mod:Outer.Inner", "pkg.mod", "Outer.Inner"),
        ("pkg.mod.Cls", "pkg.mod", "Cls"),
        ("pkg.mod.Outer.Inner", "pkg.mod.Outer", "Inner"),
        ("mod:Cls", "mod", "Cls"),
        ("  pkg.mod : Cls ", "pkg.mod", "Cls"),
    ],
)
def test_parse_accepts_both_forms(text, module, qualname):
    """A colon splits module from qualname; a dotted path splits at its last dot."""
    assert parse_path(text) == ClassPath(module, qualname)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "Cls",
            (
                "Invalid class path: 'Cls': no module part; expected 'module:QualName' or "
                "'module.QualName'"
            ),
        ),
        ("a:b:c", "Invalid class path: 'a:b:c': more than one ':'; expected 'module:QualName'"),
        (
            "pkg..mod:Cls",
            "Invalid class path: 'pkg..mod:Cls': 'pkg..mod' is not a dotted module name",
        ),
        ("pkg.mod:", "Invalid class path: 'pkg.mod:': '' is not a dotted qualified name"),
        ("1pkg:Cls", "Invalid class path: '1pkg:Cls': '1pkg' is not a dotted module name"),
        (
            "pkg:f.<locals>.C",
            (
                "Invalid class path: 'pkg:f.<locals>.C': a class defined inside "
                "a function cannot be imported by path"
            ),
        ),
        (
            "",
            (
                "Invalid class path: '': no module part; expected 'module:QualName' or "
                "'module.QualName'"
            ),
        ),
    ],
)
def test_parse_refuses_malformed_paths(text, message):
    """A malformed path raises InvalidPathError, a ValueError, with the exact reason."""
    with pytest.raises(InvalidPathError) as info:
        parse_path(text)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)
    assert info.value.path == text


def test_parse_refuses_non_strings():
    """Only strings are paths."""
    with pytest.raises(InvalidPathError, match="expected a string, got int"):
        parse_path(42)


def test_forms_round_trip():
    """colon and dotted render the two forms."""
    path = parse_path("pkg.mod:Outer.Inner")
    assert path.colon == "pkg.mod:Outer.Inner"
    assert path.dotted == "pkg.mod.Outer.Inner"
    assert parse_path(path) is path
