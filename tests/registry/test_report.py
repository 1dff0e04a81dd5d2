"""The report's records: codes and structured findings."""

from __future__ import annotations

import dataclasses

import pytest

from attn.registry.codes import ENVIRONMENT_CODES, NOTE_CODES, Code
from attn.registry.errors import ClassPath
from attn.registry.report import (
    Conflict,
    DiscoveryResult,
    Finding,
    PluginRecord,
    plain,
    result_from,
)

#: The codes a finding (attn doctor) can have: the first section of Code.
FINDING_CODES = tuple(Code)[: tuple(Code).index(Code.REGISTERED_BY_PLUGIN) + 1]

TEXT = ("FLASH_ATTN", "it cannot be imported", "fix or uninstall attn-acme")
FIELDS = {
    "distribution": "attn-acme",
    "version": "1.0",
    "group": "attn.backends",
    "value": "acme.m:B",
    "plugin_code": True,
}
LOAD_FAILURE = Finding(Code.LOAD_FAILURE, *TEXT, **FIELDS)


def _plugin(status: str = "used", distribution: str = "attn-acme") -> PluginRecord:
    return PluginRecord(
        *("FLASH_ATTN", "acme.m:B", distribution, distribution, "1.0", "/site/acme.dist-info"),
        *(0, ("attn>=0.1",), status, None, ClassPath("acme.m", "B")),
    )


def _result() -> DiscoveryResult:
    plugin, loser = (
        _plugin(),
        dataclasses.replace(_plugin("shadowed", "attn-zed"), code=Code.SHADOWED),
    )
    return DiscoveryResult(
        "attn.backends",
        "0.1.0",
        (plugin, loser),
        (Conflict("FLASH_ATTN", (plugin, loser)),),
        (LOAD_FAILURE,),
        plugins_disabled=False,
        misgrouped=(("X", "attn-typo 1.0", "attn.backend", "typo:X"),),
        unreadable=(LOAD_FAILURE,),
    )


def test_a_cached_kind_is_held_as_its_code():
    """A cached finding's kind (its plain string) comes back as the Code, equal to that string."""
    (finding,) = result_from(plain(_result())).findings
    assert finding.kind is Code.LOAD_FAILURE
    assert finding.kind == "load-failure"
    assert finding == LOAD_FAILURE


def test_a_cached_kind_that_is_no_code_is_refused():
    """A misspelt kind is a ValueError, not a finding nobody can classify."""
    group, version, plugins, conflicts, (finding,), *rest = plain(_result())
    data = (group, version, plugins, conflicts, (("load-fail", *finding[1:]),), *rest)
    with pytest.raises(ValueError, match="'load-fail' is not a valid Code"):
        result_from(data)


def test_the_finding_codes_are_the_first_section_of_code():
    """The codes doctor can report: the 14 kinds of problem and note, the notes among them."""
    assert [c.value for c in FINDING_CODES][:2] == ["invalid", "incompatible"]
    assert FINDING_CODES[-1] is Code.REGISTERED_BY_PLUGIN
    assert len(FINDING_CODES) == 14
    assert set(FINDING_CODES) >= NOTE_CODES
    assert set(FINDING_CODES) >= ENVIRONMENT_CODES


@pytest.mark.parametrize("kind", [c.value for c in FINDING_CODES])
def test_only_the_notes_let_doctor_pass(kind):
    """doctor fails on every kind of finding except the three notes."""
    finding = Finding(Code(kind), "subject", "message", "fix")
    assert finding.is_problem is (kind not in {"case-collision", "preferred", "non-plugin-copy"})
