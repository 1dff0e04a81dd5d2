"""ATTN_PREFER: an ordered choice among claimants that changes nothing else.

Real ``*.dist-info`` folders on ``sys.path``, the ``attn`` command in-process.
"""

from __future__ import annotations

import warnings

import pytest
from harness import cli, fresh, validate

import attn

GROUP = "attn.backends"
BACKEND = "from attn import AttentionBackend\n\n\nclass B(AttentionBackend):\n    pass\n"


@pytest.fixture
def claimants(site):
    """alpha and zed both claim SHARED; zed also adds ZED_ONLY."""
    for name in ("alpha", "zed"):
        site.module(f"{name}_mod", BACKEND)
    site.dist("alpha", entry_points={GROUP: {"SHARED": "alpha_mod:B"}})
    site.dist("zed", entry_points={GROUP: {"SHARED": "zed_mod:B", "ZED_ONLY": "zed_mod:B"}})
    return site


def test_prefer_makes_the_listed_claimant_win_and_keeps_the_rest(claimants, monkeypatch):
    """The first listed claimant wins; the loser's other backends stay; no conflict warning."""
    monkeypatch.setenv("ATTN_PREFER", "Zed")
    fresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert attn.AttentionBackendEnum["SHARED"].get_path() == "zed_mod.B"
        assert attn.AttentionBackendEnum["ZED_ONLY"].get_path() == "zed_mod.B"


def test_without_prefer_the_conflict_warning_suggests_it(claimants):
    """The conflict warning offers ATTN_PREFER to choose either claimant, not ATTN_PLUGINS."""
    fresh()
    with pytest.warns(attn.ConflictWarning) as caught:
        assert attn.AttentionBackendEnum["SHARED"].get_path() == "alpha_mod.B"
    (message,) = [str(w.message) for w in caught]
    assert "export ATTN_PREFER=alpha keeps alpha, export ATTN_PREFER=zed makes zed win" in message
    assert "ATTN_PLUGINS" not in message


def test_show_says_why_the_winner_won(claimants, monkeypatch):
    """attn show names the reason the winner won, and the variable that chooses another."""
    shown = cli("show", "SHARED")
    assert shown.code == 0
    flat = " ".join(shown.out.split())
    assert "wins: same sys.path entry, name sorts first; ATTN_PREFER chooses another" in flat
    monkeypatch.setenv("ATTN_PREFER", "zed")
    shown = cli("show", "SHARED")
    flat = " ".join(shown.out.split())
    assert "wins: listed first in ATTN_PREFER; ATTN_PREFER chooses another" in flat


def test_doctor_fix_for_a_conflict_applied_literally_exits_0(claimants, monkeypatch):
    """The printed ATTN_PREFER fix, applied as written, leaves doctor with a note only."""
    doctor = cli("doctor")
    assert doctor.code == 1
    flat = " ".join(doctor.out.split())
    assert "export ATTN_PREFER=alpha keeps alpha, export ATTN_PREFER=zed makes zed win" in flat
    monkeypatch.setenv("ATTN_PREFER", "zed")
    doctor = cli("doctor")
    assert doctor.code == 0, doctor.out
    assert "note (preferred, attn.backends)" in doctor.out


def test_a_conflict_fix_keeps_the_preference_already_set(claimants, site, monkeypatch):
    """Applied as printed beside another settled conflict, the fix leaves doctor at exit 0."""
    site.dist("beta", entry_points={GROUP: {"OTHER": "alpha_mod:B"}})
    site.dist("gamma", entry_points={GROUP: {"OTHER": "zed_mod:B"}})
    monkeypatch.setenv("ATTN_PREFER", "gamma")  # settles OTHER; SHARED is left
    flat = " ".join(cli("doctor").out.split())
    fix = "export ATTN_PREFER=gamma,alpha keeps alpha, export ATTN_PREFER=gamma,zed makes zed win"
    assert fix in flat
    monkeypatch.setenv("ATTN_PREFER", "gamma,zed")
    assert cli("doctor").code == 0


def test_a_name_declared_twice_by_one_claimant_counts_distributions(claimants, site, monkeypatch):
    """alpha declares SHARED twice: ATTN_PREFER settles the conflict, not alpha's mistake."""
    (site.root / "alpha-1.0.dist-info" / "entry_points.txt").write_text(
        f"[{GROUP}]\nSHARED = alpha_mod:B\nSHARED = alpha_mod:C\n", encoding="utf-8"
    )
    flat = " ".join(cli("doctor").out.split())
    assert "'SHARED' is provided by 2 distributions" in flat
    assert "export ATTN_PREFER=alpha keeps alpha, export ATTN_PREFER=zed makes zed win" in flat
    monkeypatch.setenv("ATTN_PREFER", "alpha")
    fresh()
    with pytest.warns(attn.ConflictWarning) as caught:  # alpha's own mistake, not the conflict
        assert attn.AttentionBackendEnum["SHARED"].get_path() == "alpha_mod.B"
    (warning,) = caught
    assert str(warning.message).startswith(
        "In entry-point group 'attn.backends', alpha 1.0 declares 'SHARED' 2 times "
        "('alpha_mod:B', 'alpha_mod:C'); only the first ('alpha_mod:B') counts; "
    )
    doctor = cli("doctor")
    assert doctor.code == 1
    assert "problem (shadowed, attn.backends): alpha 1.0 declares 'SHARED' 2 times" in doctor.out
    assert "note (preferred, attn.backends): 'SHARED' is provided by 2" in doctor.out


def test_show_offers_prefer_only_between_distributions(site):
    """One distribution declaring a name twice: no ATTN_PREFER value chooses the other line."""
    site.module("solo_mod", BACKEND)
    site.dist("solo", raw_entry_points=f"[{GROUP}]\nTWICE = solo_mod:B\nTWICE = solo_mod:C\n")
    flat = " ".join(cli("show", "TWICE").out.split())
    assert "wins: declared first " in flat + " "
    assert "ATTN_PREFER" not in flat


def test_listing_json_carries_the_controls(claimants, monkeypatch):
    """attn list --json names every control in effect, beside the contract's fields."""
    monkeypatch.setenv("ATTN_PREFER", "zed, alpha")
    monkeypatch.setenv("ATTN_PLUGINS", "alpha,zed")
    payload = validate(cli("list", "--json").out)
    assert payload["controls"] == {
        "ATTN_DISABLE_PLUGINS": False,
        "ATTN_PLUGINS": ["alpha", "zed"],
        "ATTN_PREFER": ["zed", "alpha"],
        "ATTN_BLOCK_PLUGINS": [],
        "ATTN_STRICT": False,
    }


def test_a_preference_that_matches_nothing_warns_once_and_fails_doctor(claimants, monkeypatch):
    """ATTN_PREFER=beta==1.0 is not silently ignored: one warning, and a doctor problem."""
    monkeypatch.setenv("ATTN_PREFER", "zed==1.0")
    fresh()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        attn.AttentionBackendEnum["SHARED"]
        attn.MLAPrefillBackendEnum["FLASH_ATTN"]
    unmatched = [str(w.message) for w in record if "ATTN_PREFER names" in str(w.message)]
    assert unmatched == [
        (
            "ATTN_PREFER names 'zed==1.0', which is not an installed attn plugin distribution; "
            "remove the names that match nothing (unset ATTN_PREFER), "
            "or put one of these in its place: alpha, zed"
        )
    ]
    doctor = cli("doctor")
    assert doctor.code == 1
    assert "problem (unmatched-selection): ATTN_PREFER names 'zed==1.0'" in doctor.out
