"""Backend availability (kernel packages found without importing them), and class paths."""

from __future__ import annotations

import sys
import threading

import pytest

import attn
from attn.registry import InvalidPathError, build_report
from attn.registry.backend import Backend, ClassPath, missing_of, parse_path, same_modules


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
    """colon and dotted render the two forms; str() is the canonical colon form."""
    path = parse_path("pkg.mod:Outer.Inner")
    assert path.colon == "pkg.mod:Outer.Inner"
    assert path.dotted == "pkg.mod.Outer.Inner"
    assert str(path) == "pkg.mod:Outer.Inner"
    assert parse_path(path) is path
