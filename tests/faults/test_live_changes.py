"""Installs, upgrades and removals while a process runs, then ``refresh()``."""

from __future__ import annotations

import shutil

import pytest
from harness import fresh

import attn

GROUP = "attn.backends"
BACKEND = "from attn import AttentionBackend\n\n\nclass B(AttentionBackend):\n    pass\n"


@pytest.fixture
def live(site):
    site.module("live_mod", BACKEND)
    fresh()
    return site


def test_install_then_refresh_adds_the_backend(live):
    """A plugin installed after the first lookup is seen after refresh(), not before."""
    assert attn.AttentionBackendEnum["TRITON_ATTN"].get_path()
    live.dist("live", entry_points={GROUP: {"LIVE": "live_mod:B"}})
    with pytest.raises(attn.UnknownBackendError):
        attn.AttentionBackendEnum["LIVE"]
    attn.AttentionBackendEnum.refresh()
    assert attn.AttentionBackendEnum["LIVE"].get_path() == "live_mod.B"


def test_uninstall_then_refresh_says_what_happened(live):
    """A held plugin backend whose distribution was uninstalled is not said to be cleared."""
    info = live.dist("live", entry_points={GROUP: {"LIVE": "live_mod:B"}})
    held = attn.AttentionBackendEnum["LIVE"]
    shutil.rmtree(info)
    attn.AttentionBackendEnum.refresh()
    with pytest.raises(attn.UnknownBackendError) as info_:
        held.get_path()
    message = str(info_.value)
    assert "clear_override" not in message
    assert message == (
        "attention backend 'LIVE' is no longer provided: since the last discovery no plugin in "
        "effect declares it (was its distribution uninstalled, or left out by ATTN_PLUGINS or "
        "ATTN_BLOCK_PLUGINS?); "
        "'attn list' shows what is in effect"
    )


def test_clear_override_then_use_says_clear_override(live):
    """A plugin backend removed with clear_override() says so, and how to get it back."""
    live.dist("live", entry_points={GROUP: {"LIVE": "live_mod:B"}})
    held = attn.AttentionBackendEnum["LIVE"]
    held.clear_override()
    with pytest.raises(attn.UnknownBackendError, match=r"removed with clear_override\(\)"):
        held.get_path()


def test_upgrade_to_an_incompatible_release_warns_and_keeps_the_builtin(live):
    """An upgrade that requires a newer attn: refresh() warns, and the built-in is back."""
    info = live.dist("live", entry_points={GROUP: {"FLASH_ATTN": "live_mod:B"}})
    assert attn.AttentionBackendEnum["FLASH_ATTN"].get_path() == "live_mod.B"
    shutil.rmtree(info)
    live.dist(
        "live", "2.0", entry_points={GROUP: {"FLASH_ATTN": "live_mod:B"}}, requires=["attn>=99"]
    )
    with pytest.warns(attn.RejectedPluginWarning, match="the built-in FLASH_ATTN stays in effect"):
        attn.AttentionBackendEnum.refresh()
    assert not attn.AttentionBackendEnum.FLASH_ATTN.is_overridden()


def test_an_incompatible_claimant_beside_a_used_one_names_the_one_in_effect(live):
    """Another plugin provides the name: the warning says its backend stays, not the built-in."""
    live.dist("live", entry_points={GROUP: {"FLASH_ATTN": "live_mod:B"}})
    live.dist("old", entry_points={GROUP: {"FLASH_ATTN": "live_mod:B"}}, requires=["attn>=99"])
    with pytest.warns(attn.RejectedPluginWarning, match="; live 1.0's FLASH_ATTN stays in effect"):
        attn.AttentionBackendEnum.refresh()
    assert attn.AttentionBackendEnum.FLASH_ATTN.get_path() == "live_mod.B"
