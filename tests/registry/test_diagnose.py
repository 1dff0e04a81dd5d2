"""``attn.registry.diagnose``: doctor's check of one registry, for a host's own tools."""

from __future__ import annotations

import importlib

import pytest

import attn
from attn.registry import AttnError, Code, diagnose

GROUP = "attn.backends"


@pytest.fixture
def problems(plugin_module, site):
    """An incompatible plugin, and a compatible one whose module fails at import."""
    site.dist("old-attn", entry_points={GROUP: {"OLD": "plug.mod:Backend"}}, requires=["attn>=99"])
    site.dist("broken-attn", entry_points={GROUP: {"BROKEN": "broken:B"}})
    site.module("broken", "raise RuntimeError('always fails at import')\n")


def test_diagnose_reports_what_strict_mode_raises(problems, monkeypatch):
    """Under ATTN_STRICT=1 a lookup raises; diagnose reports the problem and merges nothing."""
    monkeypatch.setenv("ATTN_STRICT", "1")
    with pytest.raises(AttnError):
        attn.AttentionBackendEnum.lookup("FLASH_ATTN")
    result = diagnose(attn.AttentionBackendEnum)
    assert [(f.kind, f.subject) for f in result.findings] == [(Code.INCOMPATIBLE, "OLD")]
    assert {p.name: p.status for p in result.plugins} == {"OLD": "incompatible", "BROKEN": "used"}


def test_diagnose_load_imports_every_backend(problems):
    """load=True adds the import failure of a plugin in effect, as plugin code's doing."""
    result = diagnose(attn.AttentionBackendEnum, load=True)
    (failure,) = [f for f in result.findings if f.kind is Code.LOAD_FAILURE]
    assert (failure.subject, failure.distribution, failure.plugin_code) == (
        "BROKEN",
        "broken-attn",
        True,
    )
    assert "RuntimeError: always fails at import" in failure.message
    assert not [
        f for f in diagnose(attn.AttentionBackendEnum).findings if f.kind is Code.LOAD_FAILURE
    ]


SELF_REGISTERING = """
import attn
from attn import AttentionBackend


class Good(AttentionBackend):
    pass


attn.register_backend(attn.AttentionBackendEnum["SELFREG"], "selfreg:Missing")
"""

FAILING_CHECK = """
from attn.registry import Backend, BackendEnum


class S(Backend):
    @classmethod
    def missing_requirements(cls):
        raise RuntimeError("driver query failed")


class MrEnum(BackendEnum, group="mrhost.backends", host="mrhost"):
    S = "mrhost:S"
"""


def test_diagnose_load_finds_what_list_load_marks_broken(site):
    """What plugin code registered under its own name, and a built-in whose check raises."""
    site.dist("selfreg-attn", entry_points={GROUP: {"SELFREG": "selfreg:Good"}})
    site.module("selfreg", SELF_REGISTERING)
    found = diagnose(attn.AttentionBackendEnum, load=True).findings
    failures = [(f.subject, f.value) for f in found if f.kind is Code.LOAD_FAILURE]
    assert failures == [("SELFREG", "selfreg:Missing")]
    rows = attn.registry.build_report(attn.AttentionBackendEnum, load=True).backends
    assert [b.status for b in rows if b.name == "SELFREG"] == ["broken"]
    site.module("mrhost", FAILING_CHECK)
    registry = importlib.import_module("mrhost").MrEnum
    (failure,) = diagnose(registry, load=True).findings
    assert (failure.kind, failure.message) == (
        Code.LOAD_FAILURE,
        (
            "the built-in mrhost backend 'S' (mrhost.S) loads, but its missing_requirements() "
            "raised RuntimeError: driver query failed"
        ),
    )


def test_an_interface_that_fails_to_import_is_one_finding_with_the_hosts_fix(site):
    """Every load fails alike when the registry's interface= path fails: one finding, not each."""
    site.module("ifchost_iface", "import no_such_dependency_zz\n")
    site.module(
        "ifchost",
        "from attn.registry import Backend, BackendEnum\n\nclass B(Backend): pass\n\n"
        "class IfcEnum(BackendEnum, group='ifc.backends', host='ifchost', "
        "interface='ifchost_iface:I'):\n    A = 'ifchost:B'\n    C = 'ifchost:C'\n",
    )
    (failure,) = diagnose(importlib.import_module("ifchost").IfcEnum, load=True).findings
    assert (failure.kind, failure.subject, failure.group) == (
        Code.LOAD_FAILURE,
        "IfcEnum",
        "ifc.backends",
    )
    assert failure.message == (
        "IfcEnum's interface 'ifchost_iface:I' cannot be imported: "
        "ModuleNotFoundError: No module named 'no_such_dependency_zz'"
    )
    assert failure.fix == "fix the interface= of IfcEnum (ifchost's code)"
