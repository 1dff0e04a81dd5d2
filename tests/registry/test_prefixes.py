"""Two hosts in one process: each one's switches follow its own prefix, never the other's.

attn's registries (``ATTN_*``) and a second host, kiln (``KILN_*``), each
with a plugin installed on the test's site.
"""

from __future__ import annotations

import pytest

import attn
from attn.registry import AttnConfigError, BackendEnum
from attn.registry.enum import state_of


class KilnEnum(BackendEnum, group="kiln.backends", host="kiln"):
    SLOW = "kiln.slow:Slow"


@pytest.fixture(autouse=True)
def _fresh_kiln():
    state_of(KilnEnum).reset()
    yield
    state_of(KilnEnum).reset()


@pytest.fixture
def plugins(plugin_module):
    """kiln-fast adds FAST to kiln; attn-fast adds FAST to attn's attention registry."""
    plugin_module.dist("kiln", "1.0", requires=())
    kiln = {"kiln.backends": {"FAST": "plug.mod:Backend"}}
    plugin_module.dist("kiln-fast", entry_points=kiln, requires=("kiln",))
    plugin_module.dist("attn-fast", entry_points={"attn.backends": {"FAST": "plug.mod:Backend"}})
    return plugin_module


def found() -> tuple[bool, bool]:
    """Whether each host's registry sees its plugin: (attn's, kiln's)."""
    for registry in (attn.AttentionBackendEnum, KilnEnum):
        registry.refresh()
    attn_names, kiln_names = (state_of(r).names() for r in (attn.AttentionBackendEnum, KilnEnum))
    return "FAST" in attn_names, "FAST" in kiln_names


@pytest.mark.parametrize("switch", ["READER", "NO_CACHE", "DISABLE_PLUGINS", "STRICT"])
def test_a_bad_value_of_one_hosts_switch_fails_that_host_only(plugins, monkeypatch, switch):
    """KILN_<switch>=bogus is kiln's error, naming the variable; attn's registries still work."""
    monkeypatch.setenv(f"KILN_{switch}", "bogus")
    with pytest.raises(AttnConfigError, match=f"^Invalid value for KILN_{switch}: 'bogus'"):
        KilnEnum.refresh()
    attn.AttentionBackendEnum.refresh()
    monkeypatch.delenv(f"KILN_{switch}")
    monkeypatch.setenv(f"ATTN_{switch}", " Bogus")
    KilnEnum.refresh()
    with pytest.raises(AttnConfigError, match=f"^Invalid value for ATTN_{switch}: ' Bogus'") as e:
        attn.AttentionBackendEnum.refresh()
    assert e.value.value == " Bogus"  # as set, not as compared


@pytest.mark.parametrize("switch", ["READER", "NO_CACHE"])
def test_a_bad_switch_value_is_an_error_with_plugins_disabled_too(plugins, monkeypatch, switch):
    """No scan reads the switches then, yet a bad value is the same error (docs/cli.md)."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    monkeypatch.setenv(f"ATTN_{switch}", "bogus")
    with pytest.raises(AttnConfigError, match=f"^Invalid value for ATTN_{switch}: 'bogus'"):
        attn.AttentionBackendEnum.refresh()
    monkeypatch.setenv(f"ATTN_{switch}", "")  # unset and empty are the default
    attn.AttentionBackendEnum.refresh()


def test_each_hosts_reader_is_its_own(plugins, monkeypatch):
    """Either reader finds the same plugins, whichever each host's switch picks."""
    for attn_reader, kiln_reader in [("fast", "reference"), ("reference", "fast")]:
        monkeypatch.setenv("ATTN_READER", attn_reader)
        monkeypatch.setenv("KILN_READER", kiln_reader)
        assert found() == (True, True)


def test_the_testing_kits_isolation_is_per_host(plugins, monkeypatch, tmp_path):
    """_<PREFIX>_TESTING_SITES leaves out the installed plugins of that host only."""
    monkeypatch.setenv("_KILN_TESTING_SITES", str(tmp_path / "fakes"))
    assert found() == (True, False)
    monkeypatch.delenv("_KILN_TESTING_SITES")
    monkeypatch.setenv("_ATTN_TESTING_SITES", str(tmp_path / "fakes"))
    assert found() == (False, True)


def test_each_hosts_controls_are_its_own(plugins, monkeypatch):
    """ATTN_DISABLE_PLUGINS and ATTN_BLOCK_PLUGINS leave kiln's plugins alone, and back."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    monkeypatch.setenv("KILN_BLOCK_PLUGINS", "attn-fast")
    assert found() == (False, True)
    monkeypatch.delenv("ATTN_DISABLE_PLUGINS")
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "kiln-fast")
    assert found() == (True, True)
    monkeypatch.setenv("KILN_BLOCK_PLUGINS", "kiln-fast")
    assert found() == (True, False)
