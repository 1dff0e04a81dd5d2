"""The report's records: codes, structured findings, and the plain data the cache stores."""

from __future__ import annotations

import marshal
from typing import get_args

import pytest

from attn.registry.errors import Code
from attn.registry.paths import ClassPath
from attn.registry.report import (
    Conflict,
    DiscoveryResult,
    Finding,
    FindingKind,
    PluginRecord,
    result_data,
    result_from,
)

TEXT = ("FLASH_ATTN", "it cannot be imported", "fix or uninstall attn-acme")
FIELDS = {
    "distribution": "attn-acme",
    "version": "1.0",
    "group": "attn.backends",
    "value": "acme.m:B",
    "plugin_code": True,
}
LOAD_FAILURE = Finding("load-failure", *TEXT, **FIELDS)


def _plugin(status: str = "used", distribution: str = "attn-acme") -> PluginRecord:
    return PluginRecord(
        *("FLASH_ATTN", "acme.m:B", distribution, distribution, "1.0", "/site/acme.dist-info"),
        *(0, ("attn>=0.1",), status, None, ClassPath("acme.m", "B")),
    )


def _result() -> DiscoveryResult:
    plugin, loser = _plugin(), _plugin("shadowed", "attn-zed").replace(code=Code.SHADOWED)
    return DiscoveryResult(
        "attn.backends",
        "0.1.0",
        (plugin, loser),
        (Conflict("FLASH_ATTN", (plugin, loser)),),
        (LOAD_FAILURE,),
        plugins_disabled=False,
        misgrouped=(("X", "attn-typo 1.0", "attn.backend"),),
        unreadable=(LOAD_FAILURE,),
    )


def test_a_kind_given_as_text_is_held_as_its_code():
    """A finding made with the kind's plain string holds the Code, equal to that string."""
    assert LOAD_FAILURE.kind is Code.LOAD_FAILURE
    assert LOAD_FAILURE.kind == "load-failure"
    assert Finding(Code.LOAD_FAILURE, *TEXT, **FIELDS) == LOAD_FAILURE


def test_a_kind_that_is_no_code_is_refused():
    """A misspelt kind is a ValueError, not a finding nobody can classify."""
    with pytest.raises(ValueError, match="'load-fail' is not a valid Code"):
        Finding("load-fail", "FLASH_ATTN", "m", "f")


def test_every_finding_kind_is_a_code():
    """The plain strings a finding may be given are values of the one Code enum."""
    assert {Code(kind).value for kind in get_args(FindingKind)} == set(get_args(FindingKind))


@pytest.mark.parametrize("kind", get_args(FindingKind))
def test_only_the_two_notes_let_doctor_pass(kind):
    """doctor fails on every kind of finding except the two notes."""
    finding = Finding(kind, "subject", "message", "fix")
    assert finding.is_problem is (kind not in {"case-collision", "preferred"})


def test_a_result_round_trips_through_plain_data():
    """What the cache stores is marshal-able and gives the same result, structured fields too."""
    data = marshal.loads(marshal.dumps(result_data(_result())))  # noqa: S302 - our own bytes
    assert result_from(data) == _result()
    assert result_from(data).findings == (LOAD_FAILURE,)


def _with_finding(*, short: bool = False, **changes: object) -> tuple[object, ...]:
    """The cached result, its one finding changed (fields by name, or its last one left out)."""
    data = list(result_data(_result()))
    finding = dict(zip(("kind", "subject", "message", "fix"), ("invalid", *TEXT), strict=True))
    finding |= {**FIELDS, **changes}
    values = tuple(finding.values())
    data[4] = (values[:-1] if short else values,)
    return tuple(data)


def test_a_well_formed_cached_finding_is_read():
    """The helper below changes only what each case names."""
    assert result_from(_with_finding()).findings[0].kind is Code.INVALID


@pytest.mark.parametrize(
    "changes",
    [
        {"kind": "nosuch"},
        {"version": 1},
        {"group": ("attn.backends",)},
        {"value": b"acme.m:B"},
        {"plugin_code": "yes"},
        {"short": True},
    ],
    ids=["kind", "version", "group", "value", "plugin-code", "short"],
)
def test_a_malformed_cached_finding_is_a_value_error(changes):
    """Cached data that attn did not write is refused field by field."""
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError: the cache works it out again
        result_from(_with_finding(**changes))


@pytest.mark.parametrize(("field", "value"), [(8, "maybe"), (12, "nosuch"), (12, 1)])
def test_a_cached_plugin_with_an_unknown_status_is_a_value_error(field, value):
    """A plugin row's status and reason code must be ones a row can have."""
    data = list(result_data(_result()))
    plugin = list(data[2][0])
    plugin[field] = value
    data[2] = (tuple(plugin),)
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError: the cache works it out again
        result_from(tuple(data))
