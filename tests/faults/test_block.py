"""ATTN_BLOCK_PLUGINS: a deny-list whose distributions are listed disabled and never imported.

Real ``*.dist-info`` folders on ``sys.path``, the ``attn`` command in-process.
"""

from __future__ import annotations

import sys
import warnings

import pytest
from harness import cli, flat, fresh, validate

import attn
from attn.registry.codes import Code
from attn.registry.enum import state_of

GROUP = "attn.backends"
BACKEND = "from attn import AttentionBackend\n\n\nclass B(AttentionBackend):\n    pass\n"
#: A plugin module that must never run: importing it raises.
NEVER_RUN = "raise RuntimeError('blocked plugin code ran')\n"


@pytest.fixture
def plugins(site):
    """Bad_Plug (its code must never run) overrides FLASH_ATTN, adds BAD_ONLY; good adds GOOD."""
    site.module("bad_mod", NEVER_RUN)
    site.module("good_mod", BACKEND)
    site.dist(
        "Bad_Plug", entry_points={GROUP: {"FLASH_ATTN": "bad_mod:B", "BAD_ONLY": "bad_mod:B"}}
    )
    site.dist("good", entry_points={GROUP: {"GOOD": "good_mod:B"}})
    return site


def test_a_blocked_distribution_is_disabled_and_every_other_plugin_stays(plugins, monkeypatch):
    """Blocked entry points are not merged (names normalized as pip does); the others are."""
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "bad.plug")
    fresh()
    enum = attn.AttentionBackendEnum
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert enum["FLASH_ATTN"].get_path() == enum._attn_defaults["FLASH_ATTN"].dotted
        assert enum["GOOD"].get_class().__name__ == "B"
        with pytest.raises(
            attn.UnknownBackendError, match=r"blocked by ATTN_BLOCK_PLUGINS=bad\.plug"
        ):
            enum["BAD_ONLY"]
    payload = validate(cli("list", "--json").out)
    (backends,) = [r for r in payload["registries"] if r["group"] == GROUP]
    rows = {(p["name"], p["distribution"]): (p["status"], p["reason"]) for p in backends["plugins"]}
    assert rows == {
        ("BAD_ONLY", "Bad_Plug"): ("disabled", "blocked by ATTN_BLOCK_PLUGINS=bad.plug"),
        ("FLASH_ATTN", "Bad_Plug"): ("disabled", "blocked by ATTN_BLOCK_PLUGINS=bad.plug"),
        ("GOOD", "good"): ("used", None),
    }
    assert payload["controls"]["ATTN_BLOCK_PLUGINS"] == ["bad.plug"]


@pytest.mark.parametrize(
    "command",
    [("list", "--load"), ("list", "--load", "--json"), ("doctor", "--load"), ("show", "BAD_ONLY")],
)
def test_blocked_code_is_never_imported(plugins, monkeypatch, command):
    """Commands that import every backend leave a blocked distribution's code alone."""
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "bad-plug")
    run = cli(*command, "--load") if command[0] == "show" else cli(*command)
    assert run.code == 0, run.text
    assert "blocked plugin code ran" not in run.text
    assert "bad_mod" not in sys.modules


def test_block_wins_over_the_selection(plugins, monkeypatch):
    """A distribution both selected and blocked is blocked; the other selected one is merged."""
    monkeypatch.setenv("ATTN_PLUGINS", "good,bad-plug")
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "bad-plug")
    fresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unmatched-selection warning: both are installed
        result = state_of(attn.AttentionBackendEnum).ensure()
    blocked = (Code.BLOCKED, "blocked by ATTN_BLOCK_PLUGINS=bad-plug")
    assert {(p.name, p.status, p.code, p.reason) for p in result.plugins} == {
        ("BAD_ONLY", "disabled", *blocked),
        ("FLASH_ATTN", "disabled", *blocked),
        ("GOOD", "used", None, None),
    }
    assert cli("doctor").code == 0


def test_a_blocked_claimant_never_wins_a_conflict(site, monkeypatch):
    """With ATTN_PREFER naming the blocked claimant, the other one wins, without a conflict."""
    site.module("alpha_mod", BACKEND)
    site.dist("alpha", entry_points={GROUP: {"SHARED": "alpha_mod:B", "ALPHA": "alpha_mod:B"}})
    site.dist("zed", entry_points={GROUP: {"SHARED": "zed_mod:B", "ZED": "zed_mod:B"}})
    monkeypatch.setenv("ATTN_PREFER", "zed")
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "zed")
    fresh()
    enum = attn.AttentionBackendEnum
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert enum["SHARED"].get_path() == "alpha_mod.B"
        assert enum["ALPHA"].get_path() == "alpha_mod.B"
        assert "ZED" not in state_of(enum).names()
    assert state_of(enum).ensure().conflicts == ()


def test_show_says_which_variable_disabled_a_claimant(plugins, monkeypatch):
    """attn show names ATTN_BLOCK_PLUGINS (or ATTN_PLUGINS) beside a disabled claimant."""
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "bad-plug")
    shown = cli("show", "FLASH_ATTN")
    assert shown.code == 0
    assert "- Bad_Plug 1.0: disabled by ATTN_BLOCK_PLUGINS" in shown.out
    assert "reason: blocked by ATTN_BLOCK_PLUGINS=bad-plug" in flat(shown.out)
    monkeypatch.delenv("ATTN_BLOCK_PLUGINS")
    monkeypatch.setenv("ATTN_PLUGINS", "good")
    assert "- Bad_Plug 1.0: disabled by ATTN_PLUGINS" in cli("show", "FLASH_ATTN").out


def test_doctor_says_what_is_blocked(plugins, monkeypatch):
    """attn doctor names the blocked distributions, or says that the variable blocks nothing."""
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "bad-plug,nothing-here")
    doctor = cli("doctor")
    assert doctor.code == 0, doctor.out
    assert (
        "Blocked by ATTN_BLOCK_PLUGINS=bad-plug,nothing-here: Bad_Plug 1.0 (disabled; their code "
        "is never imported)."
    ) in flat(doctor.out)
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "nothing-here")
    doctor = cli("doctor")
    assert (
        "ATTN_BLOCK_PLUGINS=nothing-here blocks no plugin in attn.backends or "
        "attn.mla_prefill_backends."
    ) in flat(doctor.out)
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "bad-plug")  # it has attn.backends entries only
    doctor = cli("doctor", "--registry", "MLAPrefillBackendEnum")
    assert "ATTN_BLOCK_PLUGINS=bad-plug blocks no plugin in attn.mla_prefill_backends." in (
        doctor.out
    )
