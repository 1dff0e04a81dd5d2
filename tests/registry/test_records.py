"""The records attn hands out: immutable, equal by value, picklable."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from attn.registry.backend import ClassPath
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
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'kind'"):
        finding.kind = "shadowed"  # type: ignore[misc]
    plugin = _plugin()
    assert dataclasses.replace(plugin, status="shadowed").status == "shadowed"
    assert plugin.status == "used"


class _Located(ClassPath):
    """A class path with one more attribute, as code might subclass it."""

    where = ""


def _located(module: str, qualname: str, where: str) -> _Located:
    path = _Located(module, qualname)
    path.where = where
    return path


def test_a_subclass_with_one_more_field_still_compares_the_paths():
    """Two paths that differ are not equal, whatever a subclass adds."""
    assert _located("a.m", "A", "here") != _located("b.m", "B", "here")
    assert _located("a.m", "A", "here") == _located("a.m", "A", "here")


def test_a_table_entry_needs_a_valid_plugin():
    """An entry point rejected for its value (no class path) never becomes a table entry."""
    from attn.registry.table import Entry  # noqa: PLC0415 - the table's record

    entry = Entry.from_plugin(_plugin())
    assert (entry.path, entry.origin, entry.distribution) == (
        ClassPath("acme.m", "B"),
        "plugin",
        "attn-acme",
    )
    invalid = dataclasses.replace(_plugin(), value="acme m", status="invalid", path=None)
    with pytest.raises(ValueError, match=r"'FLASH_ATTN' = 'acme m' of attn-acme 1.0 has no class"):
        Entry.from_plugin(invalid)
