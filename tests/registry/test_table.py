"""The state of one registry: lazy discovery, layers, refresh, warnings and strict mode."""

from __future__ import annotations

import threading
import time
import warnings

import pytest

import attn
from attn import AttnError, AttnWarning, ConflictWarning
from attn.registry import AttnConfigError, PluginProblemError, discovery
from attn.registry.enum import state_of
from attn.registry.errors import PluginWarning, parse_path
from attn.registry.table import Entry

#: attn's installed version, as messages quote it.
VERSION = attn.__version__
GROUP = "attn.backends"


def eps(**names: str) -> dict[str, dict[str, str]]:
    return {GROUP: dict(names)}


@pytest.fixture
def state():
    return state_of(attn.AttentionBackendEnum)


@pytest.fixture
def scans(monkeypatch):
    """Count the scans of installed metadata (slowed down, to widen any race)."""
    monkeypatch.setenv("ATTN_NO_CACHE", "1")  # every discovery scans: none reads the file
    calls: list[int] = []
    real = discovery.scan

    def counting(*args, **kwargs):
        calls.append(threading.get_ident())
        time.sleep(0.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(discovery, "scan", counting)
    return calls


def runtime(name: str, path: str = "plug.mod:Other") -> Entry:
    return Entry(name=name, path=parse_path(path), origin="runtime", registered_by="tests")


CONFLICT_MESSAGE = (
    "In entry-point group 'attn.backends', 'X' is provided by 2 distributions (alpha 1.0: "
    "'a:X', zed 1.0: 'z:X'); alpha 1.0 wins (same sys.path entry, name sorts first); choose "
    "the winner with ATTN_PREFER (nothing else changes): export ATTN_PREFER=alpha keeps alpha, "
    "export ATTN_PREFER=zed makes zed win; or uninstall all but one"
)


def conflicting(site):
    site.dist("alpha", entry_points=eps(X="a:X"))
    site.dist("zed", entry_points=eps(X="z:X"))


# -- lazy discovery ------------------------------------------------------------


def test_fresh_state_has_not_discovered(state, scans):
    """A registry's state starts undiscovered and scans nothing."""
    assert not state.discovered_yet
    assert scans == []


def test_ensure_discovers_once(state, scans):
    """The first ensure() scans; later ones reuse the result."""
    first = state.ensure()
    assert state.ensure() is first
    assert state.discovered_yet
    assert len(scans) == 1


def test_registries_discover_separately(scans):
    """Discovering one registry does not discover the other."""
    state_of(attn.AttentionBackendEnum).ensure()
    assert not state_of(attn.MLAPrefillBackendEnum).discovered_yet


def test_threads_on_a_fresh_registry_scan_once(state, site, scans):
    """Two threads touching a fresh registry at once scan once and see the same table."""
    site.dist("plug", entry_points=eps(PLUG_X="plug.mod:Backend"))
    barrier = threading.Barrier(2)
    seen: list[tuple[object, object]] = []

    def touch() -> None:
        barrier.wait(timeout=30)
        entry = state.lookup("PLUG_X")
        seen.append((state.ensure(), entry))

    threads = [threading.Thread(target=touch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert [thread.is_alive() for thread in threads] == [False, False]
    assert len(scans) == 1
    assert len(seen) == 2
    assert seen[0][0] is seen[1][0]
    assert seen[0][1] is seen[1][1]
    assert (seen[0][1].origin, seen[0][1].value) == ("plugin", "plug.mod:Backend")


# -- the layers ----------------------------------------------------------------


def test_discovered_entries_fill_the_table(state, site):
    """A used entry point becomes a plugin entry of the table."""
    site.dist("plug", "1.5", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    assert state.lookup("FLASH_ATTN") == Entry(
        name="FLASH_ATTN",
        path=parse_path("plug.mod:Backend"),
        origin="plugin",
        distribution="plug",
        version="1.5",
        value="plug.mod:Backend",
    )


def test_runtime_registration_replaces_a_plugin_entry(state, site):
    """A runtime registration goes on top of the plugin's entry for that name."""
    site.dist("plug", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    state.register(runtime("FLASH_ATTN"))
    assert state.lookup("FLASH_ATTN") == runtime("FLASH_ATTN")
    assert state.snapshot().discovered["FLASH_ATTN"].origin == "plugin"


@pytest.mark.parametrize(
    ("fields", "label", "shown"),
    [
        ({"registered_by": "host.setup"}, None, "host.setup"),
        (
            {"registered_by": "acme.mod", "plugin_distribution": "acme", "plugin_version": "1.0"},
            "acme 1.0",
            "acme.mod (plugin code of acme 1.0)",
        ),
        ({"plugin_distribution": "acme"}, "acme", "unknown code (plugin code of acme)"),
    ],
)
def test_a_runtime_entry_records_who_registered_it(fields, label, shown):
    """A runtime entry keeps the registering module and the plugin apart; listings show both."""
    entry = Entry("X", parse_path("m:X"), "runtime", **fields)
    assert (entry.plugin_label, entry.registrant) == (label, shown)


def test_registration_discovers_first(state, scans):
    """Registering runs discovery first, so a later lookup does not rescan over it."""
    state.register(runtime("CUSTOM"))
    assert len(scans) == 1
    assert state.lookup("CUSTOM") == runtime("CUSTOM")
    assert len(scans) == 1


def test_clear_drops_both_layers_until_refresh(state, site):
    """clear() removes the name from the table; refresh() brings the plugin entry back."""
    site.dist("plug", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    state.register(runtime("FLASH_ATTN"))
    state.clear("FLASH_ATTN")
    assert state.lookup("FLASH_ATTN") is None
    assert state.was_cleared("FLASH_ATTN")
    state.refresh()
    assert state.lookup("FLASH_ATTN").origin == "plugin"
    assert not state.was_cleared("FLASH_ATTN")


def test_clear_forgets_a_runtime_registration(state):
    """A runtime registration dropped with clear() does not come back at refresh()."""
    state.register(runtime("CUSTOM"))
    state.clear("CUSTOM")
    state.refresh()
    assert state.lookup("CUSTOM") is None


def test_clear_without_entry(state):
    """clear() on a name without an entry leaves the table as it was."""
    names = state.names()
    state.clear("FLASH_ATTN")
    assert state.names() == names


def test_refresh_rescans(state, site, scans):
    """refresh() runs discovery again and finds a distribution installed since."""
    state.ensure()
    site.dist("plug", entry_points=eps(NEW_ONE="plug.mod:Backend"))
    assert state.lookup("NEW_ONE") is None
    state.refresh()
    assert state.lookup("NEW_ONE").distribution == "plug"
    assert len(scans) == 2


def test_refresh_keeps_runtime_registrations(state, site):
    """Runtime registrations survive a refresh and stay on top of plugin entries."""
    state.register(runtime("CUSTOM"))
    site.dist("plug", entry_points=eps(CUSTOM="plug.mod:Backend"))
    state.refresh()
    assert state.lookup("CUSTOM") == runtime("CUSTOM")
    assert state.snapshot().discovered["CUSTOM"].origin == "plugin"


def test_refresh_forgets_uninstalled_plugins(state, site):
    """A plugin removed since the last discovery leaves the table at refresh."""
    info = site.dist("plug", entry_points=eps(NEW_ONE="plug.mod:Backend"))
    assert state.lookup("NEW_ONE").distribution == "plug"
    (info / "entry_points.txt").unlink()
    state.refresh()
    assert state.lookup("NEW_ONE") is None


def test_snapshot_is_a_copy(state):
    """A snapshot does not change when the registry changes later, and is read-only."""
    snapshot = state.snapshot()
    state.register(runtime("CUSTOM"))
    assert dict(snapshot.table) == {}
    assert dict(snapshot.runtime) == {}
    with pytest.raises(TypeError):
        snapshot.table["CUSTOM"] = runtime("CUSTOM")  # type: ignore[index]


def test_reset_forgets_everything(state, scans):
    """reset() drops discovery and runtime registrations; the next use discovers again."""
    state.register(runtime("CUSTOM"))
    state.reset()
    assert not state.discovered_yet
    assert state.lookup("CUSTOM") is None
    assert len(scans) == 2


def test_names(state, site):
    """names() lists the table's names."""
    site.dist("plug", entry_points=eps(B="m:B", A="m:A"))
    state.register(runtime("CUSTOM"))
    assert sorted(state.names()) == ["A", "B", "CUSTOM"]


# -- warnings ------------------------------------------------------------------


def test_conflict_warning_class():
    """The conflict warning is an attn warning, hence a UserWarning."""
    assert issubclass(ConflictWarning, AttnWarning)
    assert issubclass(AttnWarning, UserWarning)
    assert ConflictWarning.__module__ == "attn"


def test_conflict_warns_at_first_discovery(state, site):
    """The merge warns once, naming every claimant and ATTN_PLUGINS."""
    conflicting(site)
    with pytest.warns(ConflictWarning) as record:
        state.ensure()
    assert [str(w.message) for w in record] == [CONFLICT_MESSAGE]
    state.ensure()  # no second warning: pytest turns warnings into errors


@pytest.mark.parametrize(
    "touch",
    [
        lambda: state_of(attn.AttentionBackendEnum).ensure(),
        lambda: attn.AttentionBackendEnum["X"],
        lambda: attn.AttentionBackendEnum.FLASH_ATTN.get_path(),  # noqa: PLW0108 - late binding
        lambda: attn.AttentionBackendEnum.refresh(),  # noqa: PLW0108 - late binding
    ],
    ids=["ensure", "lookup", "get_path", "refresh"],
)
def test_conflict_warning_points_at_the_caller(site, touch):
    """The warning is attributed to the code that touched the registry, not to attn."""
    conflicting(site)
    with pytest.warns(ConflictWarning) as record:
        touch()
    assert (record[0].filename, record[0].lineno) == (__file__, touch.__code__.co_firstlineno)


def test_conflict_warns_at_each_refresh(state, site):
    """Every refresh merges again, and warns again."""
    conflicting(site)
    with pytest.warns(ConflictWarning, match="provided by 2 distributions"):
        state.ensure()
    for _ in range(2):
        with pytest.warns(ConflictWarning) as record:
            state.refresh()
        assert [str(w.message) for w in record] == [CONFLICT_MESSAGE]


def test_no_warning_without_conflict(state, site):
    """A name claimed once does not warn, and it is merged."""
    site.dist("alpha", entry_points=eps(X="a:X"))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        state.ensure()
    assert [str(w.message) for w in record] == []
    assert state.lookup("X").distribution == "alpha"


def test_unmatched_selection_warns(state, site, monkeypatch):
    """An ATTN_PLUGINS name that matches nothing warns, listing the valid names."""
    site.dist("attn-plug", entry_points=eps(X="a:X"))
    monkeypatch.setenv("ATTN_PLUGINS", "attn-plgu")
    with pytest.warns(PluginWarning) as record:
        state.ensure()
    assert [str(w.message) for w in record] == [
        (
            "ATTN_PLUGINS names 'attn-plgu', which is not an installed attn plugin distribution; "
            "use one of: attn-plug"
        )
    ]
    assert issubclass(PluginWarning, AttnWarning)


def test_a_warning_about_the_whole_environment_is_issued_once_not_per_registry(site):
    """Metadata nobody can read is one RejectedPluginWarning, whichever registries discover."""
    site.dist("plug", raw_entry_points="A = a:A\n")  # entries before any [group] header
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        state_of(attn.AttentionBackendEnum).ensure()
        state_of(attn.MLAPrefillBackendEnum).ensure()
    assert [w.category.__name__ for w in record] == ["RejectedPluginWarning"]
    with pytest.warns(AttnWarning) as record:
        attn.MLAPrefillBackendEnum.refresh()  # a new scan: its merge warns again
    assert [w.category.__name__ for w in record] == ["RejectedPluginWarning"]


def test_a_warning_turned_into_an_error_fails_the_first_access_only(state, site):
    """Under -W error, a rejected plugin raises at the first lookup; the next ones work."""
    site.dist("plug", entry_points=eps(FLASH_ATTN="p:B"), requires=["attn>=99"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(attn.registry.RejectedPluginWarning, match="is incompatible"):
            attn.AttentionBackendEnum["FLASH_ATTN"]
        assert attn.AttentionBackendEnum["FLASH_ATTN"].get_path().startswith("attn.backends.")
        assert not attn.AttentionBackendEnum.FLASH_ATTN.is_overridden()


def test_invalid_control_raises_at_every_access(state, monkeypatch):
    """A bad boolean value raises an AttnConfigError naming the variable, on every access."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "maybe")
    for _ in range(2):
        with pytest.raises(AttnConfigError, match=r"^Invalid value for ATTN_DISABLE_PLUGINS: "):
            state.ensure()
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "off")
    assert not state.ensure().plugins_disabled


def test_disabled_plugins(state, site, monkeypatch):
    """ATTN_DISABLE_PLUGINS=1 leaves only runtime registrations in the table."""
    site.dist("plug", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    state.register(runtime("CUSTOM"))
    assert state.ensure().plugins_disabled
    assert list(state.names()) == ["CUSTOM"]


# -- strict mode ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry_points", "requires", "problem"),
    [
        (
            eps(X="plug.mod"),
            ["attn>=0.1"],
            (
                "plug 1.0: entry point 'X' = 'plug.mod' is invalid: no attribute part; "
                "expected 'module:attr'"
            ),
        ),
        (
            eps(X="m:X"),
            ["attn>=9.0"],
            (
                f"plug 1.0 provides 'X' = 'm:X' but is incompatible: requires attn>=9.0, "
                f"installed {VERSION}"
            ),
        ),
        (
            eps(X="m:X"),
            [],
            (
                "plug 1.0 declares 'X' = 'm:X' but no requirement on attn, so its compatibility "
                "cannot be checked"
            ),
        ),
    ],
)
def test_strict_raises_at_discovery(  # noqa: PLR0917 - fixtures plus the case table
    state, site, monkeypatch, entry_points, requires, problem
):
    """Under ATTN_STRICT=1 each plugin problem raises a PluginProblemError at discovery."""
    site.dist("plug", entry_points=entry_points, requires=requires)
    monkeypatch.setenv("ATTN_STRICT", "1")
    with pytest.raises(PluginProblemError) as info:
        state.ensure()
    assert str(info.value) == (
        "ATTN_STRICT=1 and the attention backend plugins in group 'attn.backends' have "
        f"1 problem(s):\n  - {problem}\nRun 'attn doctor' for the fixes."
    )
    assert info.value.problems == (problem,)
    assert isinstance(info.value, AttnError)


def test_strict_lists_each_problem_once_as_doctor_counts_it(state, site, monkeypatch):
    """One unparseable requirement on attn is one problem, however many backends it declares."""
    site.dist("plug", entry_points=eps(X="m:X", Y="m:Y"), requires=["attn ===0.1.0,~=01"])
    (problem,) = dict.fromkeys(f.message for f in state.diagnose().findings)  # doctor's one line
    assert problem.startswith("plug 1.0 declares 'X' = 'm:X', 'Y' = 'm:Y', but has an invalid ")
    monkeypatch.setenv("ATTN_STRICT", "1")
    with pytest.raises(PluginProblemError) as info:
        state.ensure()
    assert info.value.problems == (problem,)
    assert "have 1 problem(s):\n" in str(info.value)


def _typo_group(sites, monkeypatch):
    sites.new().dist("plug", entry_points={"attn.backend": {"X": "plug.mod:Backend"}})


def _installed_twice(sites, monkeypatch):
    sites.new("a").dist("plug", "2.0", entry_points=eps(X="plug.mod:Backend"))
    sites.new("b").dist("plug", "1.0", entry_points=eps(X="plug.mod:Backend"))


def _empty_copy_first(sites, monkeypatch):
    (sites.new("a").root / "plug-1.0.dist-info").mkdir()
    sites.new("b").dist("plug", entry_points=eps(X="plug.mod:Backend"))


def _unmatched_selection(sites, monkeypatch):
    sites.new().dist("plug", entry_points=eps(X="plug.mod:Backend"))
    monkeypatch.setenv("ATTN_PLUGINS", "plgu")


def _unreadable_entry_points(sites, monkeypatch):
    info = sites.new().dist("plug", entry_points=eps(X="plug.mod:Backend"))
    (info / "entry_points.txt").write_bytes(b"[attn.backends]\nX = plug.mod:\xff\n")


@pytest.mark.parametrize(
    ("build", "kind", "says"),
    [
        (_typo_group, "typo-group", "group 'attn.backend', which looks like a typo"),
        (_installed_twice, "duplicate-metadata", "plug is installed twice"),
        (_empty_copy_first, "empty-metadata", "cannot be used"),
        (_unmatched_selection, "unmatched-selection", "ATTN_PLUGINS names 'plgu'"),
        (_unreadable_entry_points, "unreadable-metadata", "plug"),
    ],
    ids=["typo-group", "duplicate-metadata", "empty-metadata", "unmatched-selection", "unreadable"],
)
def test_strict_raises_for_every_problem_doctor_reports(  # noqa: PLR0917 - fixtures plus the case
    state, sites, monkeypatch, build, kind, says
):
    """Under ATTN_STRICT=1 each kind of problem doctor reports raises at discovery."""
    build(sites, monkeypatch)
    (finding,) = [f for f in state.diagnose().findings if f.kind == kind]
    assert finding.is_problem
    assert says in finding.message
    monkeypatch.setenv("ATTN_STRICT", "1")
    with pytest.raises(PluginProblemError) as info:
        state.ensure()
    assert finding.message in info.value.problems


def test_strict_ignores_notes(state, site, monkeypatch):
    """A note (a name that differs from a built-in by case) does not make strict mode raise."""
    site.dist("plug", entry_points=eps(flash_attn="plug.mod:Backend"))
    monkeypatch.setenv("ATTN_STRICT", "1")
    assert [f.kind for f in state.ensure().findings] == ["case-collision"]


def test_strict_conflict_raises_instead_of_warning(state, site, monkeypatch):
    """Under ATTN_STRICT=1 a conflict raises and does not warn."""
    conflicting(site)
    monkeypatch.setenv("ATTN_STRICT", "1")
    with pytest.raises(PluginProblemError) as info:
        state.ensure()
    assert info.value.problems == (
        (
            "'X' is provided by 2 distributions (alpha 1.0: 'a:X', zed 1.0: 'z:X'); alpha 1.0 "
            "wins (same sys.path entry, name sorts first)"
        ),
    )


def test_strict_raises_on_every_access_until_fixed(state, site, monkeypatch, scans):
    """Every access fails while the problem is there; once it is gone, the registry works."""
    info = site.dist("plug", entry_points=eps(X="plug.mod"))
    monkeypatch.setenv("ATTN_STRICT", "1")
    for _ in range(3):
        with pytest.raises(PluginProblemError):
            state.lookup("X")
    assert not state.discovered_yet
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nX = plug.mod:Backend\n", encoding="utf-8")
    assert state.lookup("X").value == "plug.mod:Backend"
    assert len(scans) == 4


def test_strict_refresh_failure_fails_later_accesses(state, site, monkeypatch):
    """A problem found by refresh() keeps failing every access, not just the refresh."""
    state.ensure()
    site.dist("plug", entry_points=eps(X="plug.mod"))
    monkeypatch.setenv("ATTN_STRICT", "1")
    with pytest.raises(PluginProblemError):
        state.refresh()
    with pytest.raises(PluginProblemError):
        state.lookup("FLASH_ATTN")


def test_strict_mode_ignores_the_other_registry(site, monkeypatch):
    """A problem in one group does not fail the other registry."""
    site.dist("plug", entry_points=eps(X="plug.mod"))
    monkeypatch.setenv("ATTN_STRICT", "1")
    assert state_of(attn.MLAPrefillBackendEnum).ensure().plugins == ()


def test_strict_with_clean_plugins(state, site, monkeypatch):
    """Strict mode with problem-free plugins discovers normally."""
    site.dist("plug", entry_points=eps(X="plug.mod:Backend"))
    monkeypatch.setenv("ATTN_STRICT", "true")
    assert [p.status for p in state.ensure().plugins] == ["used"]


def test_invalidate_makes_the_next_access_discover(state, site, scans):
    """invalidate() scans nothing itself; the next access discovers again, keeping runtime."""
    state.register(runtime("CUSTOM"))
    site.dist("plug", entry_points=eps(NEW_ONE="plug.mod:Backend"))
    state.invalidate()
    assert len(scans) == 1
    assert state.lookup("NEW_ONE").distribution == "plug"
    assert state.lookup("CUSTOM") == runtime("CUSTOM")
    assert len(scans) == 2


def test_restore_puts_back_a_snapshot(state, site):
    """restore() brings back the layers, the table, the clears and the discovery result."""
    site.dist("plug", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    state.register(runtime("CUSTOM"))
    state.clear("FLASH_ATTN")
    before = state.snapshot()
    state.register(runtime("XFORMERS"))
    state.refresh()
    state.restore(before)
    after = state.snapshot()
    assert (dict(after.table), dict(after.runtime), after.cleared) == (
        {"CUSTOM": runtime("CUSTOM")},
        {"CUSTOM": runtime("CUSTOM")},
        frozenset({"FLASH_ATTN"}),
    )
    assert after.result is before.result
    assert after.discovered["FLASH_ATTN"].distribution == "plug"
