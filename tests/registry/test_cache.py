"""The discovery cache: one scan per process for a host's registries, and on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import attn
from attn.registry import discovery, state_of

GROUP = "attn.backends"
PREFILL = "attn.mla_prefill_backends"


@pytest.fixture
def scans(monkeypatch):
    """Count the scans of installed metadata."""
    calls: list[int] = []
    real = discovery.scan

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(discovery, "scan", counting)
    return calls


def test_sibling_registries_share_one_scan(site, scans):
    """The first discovery of each of attn's two registries scans sys.path once in all."""
    site.dist("both", entry_points={GROUP: {"A": "both.m:A"}, PREFILL: {"P": "both.m:P"}})
    assert attn.AttentionBackendEnum["A"].get_path() == "both.m.A"
    assert attn.MLAPrefillBackendEnum["P"].get_path() == "both.m.P"
    assert len(scans) == 1


def test_refresh_scans_again_for_the_sibling_too(site, scans):
    """refresh() scans again, and a sibling discovered later uses that newer scan."""
    state_of(attn.AttentionBackendEnum).ensure()
    site.dist("late", entry_points={PREFILL: {"LATE": "late.m:P"}})
    attn.AttentionBackendEnum.refresh()
    assert attn.MLAPrefillBackendEnum["LATE"].get_path() == "late.m.P"
    assert len(scans) == 2


def test_realpath_only_for_names_found_twice(sites, monkeypatch):
    """De-duplication resolves symlinks only for distributions that have a second copy."""
    first, second = sites.new("first"), sites.new("second")
    first.dist("once", entry_points={GROUP: {"ONCE": "once.m:A"}})
    first.dist("twice", "2.0", entry_points={GROUP: {"TWICE": "twice.m:A"}})
    second.dist("twice", "1.0", entry_points={GROUP: {"TWICE": "twice.m:A"}})
    resolved: list[str] = []

    def counting(path):
        resolved.append(Path(path).name)
        return os.path.realpath(path)

    monkeypatch.setattr(discovery, "realpath", counting)
    state_of(attn.AttentionBackendEnum).ensure()
    assert sorted(resolved) == ["twice-1.0.dist-info", "twice-2.0.dist-info"]
