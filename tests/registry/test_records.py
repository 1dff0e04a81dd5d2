"""The immutable records of ``registry/_records.py``."""

from __future__ import annotations

import pickle

import pytest

from attn.registry.paths import ClassPath
from attn.registry.report import Finding, PluginRecord


def _plugin() -> PluginRecord:
    return PluginRecord(
        "FLASH_ATTN",
        "acme.m:B",
        "attn-acme",
        "attn-acme",
        "1.0",
        "/site/attn_acme-1.0.dist-info",
        0,
        ("attn>=0.1",),
        "used",
        None,
        ClassPath("acme.m", "B"),
    )


def test_records_pickle_to_equal_records():
    """A record sent to another process (pickled) arrives equal, with every field."""
    plugin = _plugin()
    copy = pickle.loads(pickle.dumps(plugin))  # noqa: S301 - our own bytes
    assert copy == plugin
    assert (copy.distribution_version, copy.path) == ("1.0", ClassPath("acme.m", "B"))


def test_records_refuse_changes():
    """A record's fields cannot be set; replace() makes a changed copy."""
    finding = Finding("invalid", "attn-acme", "bad value", "fix it")
    with pytest.raises(AttributeError, match="Finding is immutable"):
        finding.kind = "shadowed"  # type: ignore[misc]
    assert finding.replace(kind="shadowed").kind == "shadowed"
    assert finding.kind == "invalid"
