"""``attn.registry.build_report`` and ``diagnose``: what ``attn list`` and ``doctor`` show."""

from __future__ import annotations

import sys

import pytest

import attn
from attn.registry import Code, build_report, diagnose

GROUP = "attn.backends"

KERNEL_BACKEND = """\
from attn import AttentionBackend


class NeedsKernel(AttentionBackend):
    requires = ("absent-kernel",)


class BadProbe(AttentionBackend):
    @classmethod
    def missing_requirements(cls):
        raise RuntimeError("probe failed")
"""


def _row(report, name):
    (row,) = [r for r in report.backends if r.name == name]
    return row


def test_report_imports_no_plugin_code_unless_asked(site):
    """Without ``load`` a plugin's module is not imported: its row cannot tell availability."""
    site.module("plug_kernels", "raise RuntimeError('imported')\n")
    site.dist("plug", entry_points={GROUP: {"KERNEL": "plug_kernels:NeedsKernel"}})
    row = _row(build_report(attn.AttentionBackendEnum), "KERNEL")
    assert "plug_kernels" not in sys.modules
    assert (row.status, row.available, row.distribution) == ("ok", None, "plug")


def test_loaded_rows_take_the_imported_class_availability(site):
    """With ``load`` the row says what the imported class declares and what is missing."""
    site.module("plug_kernels", KERNEL_BACKEND)
    site.dist("plug", entry_points={GROUP: {"KERNEL": "plug_kernels:NeedsKernel"}})
    assert _row(build_report(attn.AttentionBackendEnum), "KERNEL").available is None
    row = _row(build_report(attn.AttentionBackendEnum, load=["KERNEL"]), "KERNEL")
    assert (row.status, row.available, row.requires, row.missing) == (
        "ok",
        False,
        ("absent-kernel",),
        ("absent-kernel",),
    )


def test_a_class_that_loads_but_cannot_answer_is_broken_with_its_finding(site):
    """A class whose ``missing_requirements()`` raises: a broken row and a load-failure finding."""
    site.module("plug_kernels", KERNEL_BACKEND)
    site.dist("plug", "2.0", entry_points={GROUP: {"PROBE": "plug_kernels:BadProbe"}})
    report = build_report(attn.AttentionBackendEnum, load=True)
    row = _row(report, "PROBE")
    assert row.status == "broken"
    assert row.reason == "its missing_requirements() raised RuntimeError: probe failed"
    (finding,) = [f for f in report.findings if f.kind is Code.LOAD_FAILURE]
    assert (finding.subject, finding.distribution, finding.version) == ("PROBE", "plug", "2.0")
    assert (finding.value, finding.plugin_code) == ("plug_kernels:BadProbe", True)
    assert "loads, but its missing_requirements() raised" in finding.message


def test_a_name_registered_by_plugin_code_is_plugin_code_s_finding(site):
    """Plugin code that registers a name its distribution does not declare: plugin code did it."""
    site.module(
        "plug_kernels",
        KERNEL_BACKEND + "import attn\n"
        "attn.register_backend(attn.AttentionBackendEnum.TORCH_SDPA, 'plug_kernels:NeedsKernel')\n",
    )
    site.dist("plug", "2.0", entry_points={GROUP: {"KERNEL": "plug_kernels:NeedsKernel"}})
    with pytest.warns(UserWarning, match="plug does not declare 'TORCH_SDPA'"):
        result = diagnose(attn.AttentionBackendEnum, load=True)
    (finding,) = [f for f in result.findings if f.kind is Code.REGISTERED_BY_PLUGIN]
    assert (finding.subject, finding.distribution, finding.version) == ("TORCH_SDPA", "plug", "2.0")
    assert (finding.value, finding.plugin_code) == ("plug_kernels:NeedsKernel", True)
    assert _row(build_report(attn.AttentionBackendEnum), "TORCH_SDPA").origin == "runtime"


def test_a_row_registered_while_loading_shows_the_class_now_in_effect(site):
    """A built-in imported before plugin code replaced it: its row says what the new class does."""
    site.module(
        "plug_kernels",
        "import attn\n"
        "class Plain(attn.AttentionBackend):\n    pass\n"
        "attn.register_backend(attn.AttentionBackendEnum.TORCH_SDPA, 'plug_kernels:Plain')\n",
    )
    site.dist("plug", "2.0", entry_points={GROUP: {"KERNEL": "plug_kernels:Plain"}})
    with pytest.warns(UserWarning, match="plug does not declare 'TORCH_SDPA'"):
        row = _row(build_report(attn.AttentionBackendEnum, load=True), "TORCH_SDPA")
    assert (row.origin, row.path, row.status) == ("runtime", "plug_kernels.Plain", "ok")
    assert (row.available, row.requires, row.missing) == (True, (), ())


def test_a_runtime_registration_that_cannot_load_is_a_load_failure():
    """doctor --load imports the host's own registration in effect too, as list --load does."""
    attn.register_backend(attn.AttentionBackendEnum.FLASH_ATTN, "no_such_module_xyz:X")
    failures = [
        (f.subject, f.value, f.distribution, f.plugin_code, f.fix, "No module named" in f.message)
        for f in diagnose(attn.AttentionBackendEnum, load=True).findings
        if f.kind is Code.LOAD_FAILURE
    ]
    fix = "see the message for the fix"  # the message says how to register an importable class
    assert failures == [("FLASH_ATTN", "no_such_module_xyz:X", None, False, fix, True)]
    assert diagnose(attn.AttentionBackendEnum).findings == ()  # without load: nothing imported


def test_a_finding_from_metadata_alone_is_not_plugin_code(site):
    """An incompatible plugin is found without running its code: not plugin code's doing."""
    site.dist("old-attn", "1.0", entry_points={GROUP: {"OLD": "old:B"}}, requires=["attn>=99"])
    (finding,) = diagnose(attn.AttentionBackendEnum).findings
    assert (finding.kind, finding.distribution, finding.plugin_code) == (
        Code.INCOMPATIBLE,
        "old-attn",
        False,
    )


def test_a_built_in_that_cannot_be_loaded_is_the_host_s_finding():
    """doctor --load of a host whose own backend's module is missing: reinstall the host."""
    from attn.registry import BackendEnum, enum  # noqa: PLC0415

    class Toy(BackendEnum, group="toyx.backends", host="toyx"):
        GONE = "toyx_missing_module:Backend"

    try:
        result = diagnose(Toy, load=True)
    finally:
        del enum._DECLARED[f"{Toy.__module__}:{Toy.__qualname__}"]
    (finding,) = [f for f in result.findings if f.kind is Code.LOAD_FAILURE]
    assert (finding.subject, finding.distribution, finding.group, finding.value) == (
        "GONE",
        "toyx",
        "toyx.backends",
        "toyx_missing_module:Backend",
    )
    assert not finding.plugin_code
    assert finding.fix.startswith("reinstall toyx (pip install --force-reinstall --no-deps toyx)")
