"""Plugins end to end, through attn's public API, with real metadata on sys.path."""

from __future__ import annotations

import re
import sys
import textwrap

import pytest

import attn
from attn import (
    AttentionBackendEnum,
    AttnError,
    BackendLoadError,
    ConflictWarning,
    MLAPrefillBackendEnum,
    UnknownBackendError,
    register_backend,
)
from attn.registry import AttnConfigError, PluginProblemError, build_report
from attn.registry.enum import state_of
from attn.registry.errors import RejectedPluginWarning

#: attn's installed version, as messages quote it.
VERSION = attn.__version__
GROUP = "attn.backends"
BUILTINS = ", ".join(m.name for m in AttentionBackendEnum)
MLA_BUILTINS = ", ".join(m.name for m in MLAPrefillBackendEnum)


def eps(**names: str) -> dict[str, dict[str, str]]:
    return {GROUP: dict(names)}


def discovered() -> bool:
    return state_of(AttentionBackendEnum).discovered_yet


@pytest.fixture
def plug(plugin_module):
    """A site with the plugin module ``plug.mod``."""
    return plugin_module


@pytest.fixture
def override(plug):
    """The distribution attn-plug overrides FLASH_ATTN and adds NEW_ONE and NESTED."""
    plug.dist(
        "attn-plug",
        "1.2",
        entry_points=eps(
            FLASH_ATTN="plug.mod:Backend",
            NEW_ONE="plug.mod:Other",
            NESTED="plug.mod:Outer.Inner",
        ),
    )
    return plug


# -- when discovery runs ------------------------------------------------------------


def test_import_attn_does_not_discover(python):
    """A fresh interpreter imports attn and a registry without scanning anything."""
    code = textwrap.dedent(
        """
        import sys
        import attn
        from attn.registry.enum import state_of
        registry = attn.AttentionBackendEnum
        print(state_of(registry).discovered_yet, "importlib.metadata" in sys.modules)
        """
    )
    out = python.run("-c", code).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize(
    "touch",
    [
        pytest.param(lambda: AttentionBackendEnum["FLASH_ATTN"], id="lookup"),
        pytest.param(AttentionBackendEnum.FLASH_ATTN.get_path, id="get_path"),
        pytest.param(AttentionBackendEnum.TORCH_SDPA.get_class, id="get_class"),
        pytest.param(AttentionBackendEnum.FLASH_ATTN.is_overridden, id="is_overridden"),
        pytest.param(AttentionBackendEnum.FLASH_ATTN.clear_override, id="clear_override"),
        pytest.param(
            lambda: register_backend(AttentionBackendEnum.CUSTOM, "plug.mod:Backend"),
            id="register",
        ),
        pytest.param(lambda: register_backend(AttentionBackendEnum.CUSTOM), id="decorator"),
        pytest.param(lambda: build_report(AttentionBackendEnum), id="listing"),
        pytest.param(AttentionBackendEnum.refresh, id="refresh"),
    ],
)
def test_discovery_is_triggered_by(touch):
    """Lookups, the four methods, registration, listing and refresh() run discovery."""
    assert not discovered()
    touch()
    assert discovered()


@pytest.mark.parametrize(
    "touch",
    [
        pytest.param(lambda: AttentionBackendEnum.FLASH_ATTN, id="attribute"),
        pytest.param(lambda: list(AttentionBackendEnum), id="iteration"),
        pytest.param(lambda: AttentionBackendEnum.FLASH_ATTN.name, id="name"),
    ],
)
def test_discovery_is_not_triggered_by(touch):
    """Attribute access and iteration over the members do not run discovery."""
    touch()
    assert not discovered()


# -- plugins in effect -------------------------------------------------------------


def test_plugin_overrides_a_builtin(override):
    """An entry point named like a built-in replaces its class."""
    member = AttentionBackendEnum["FLASH_ATTN"]
    assert member is AttentionBackendEnum.FLASH_ATTN
    assert member.get_path() == "plug.mod.Backend"
    assert member.get_path(include_classname=False) == "plug.mod"
    assert member.get_class().__module__ == "plug.mod"
    assert member.is_overridden()


def test_clear_override_returns_to_the_default_until_refresh(override):
    """clear_override() drops the plugin entry; refresh() discovers it again."""
    member = AttentionBackendEnum.FLASH_ATTN
    member.clear_override()
    assert member.get_path() == "attn.backends.attention.FlashAttentionBackend"
    assert not member.is_overridden()
    AttentionBackendEnum.refresh()
    assert member.get_path() == "plug.mod.Backend"


def test_plugin_adds_new_names(override):
    """A new name is an object with the four methods and .name."""
    backend = AttentionBackendEnum["NEW_ONE"]
    assert backend.name == "NEW_ONE"
    assert backend.get_path() == "plug.mod.Other"
    assert backend.get_class().__qualname__ == "Other"
    assert not backend.is_overridden()


def test_nested_class(override):
    """module:Outer.Inner loads the nested class; the module path is right."""
    backend = AttentionBackendEnum["NESTED"]
    assert backend.get_path() == "plug.mod.Outer.Inner"
    assert backend.get_path(include_classname=False) == "plug.mod"
    assert backend.get_class().__qualname__ == "Outer.Inner"


def test_plugin_backend_is_the_same_object_until_refresh(override):
    """Repeated lookups return one object; refresh() makes a new one."""
    backend = AttentionBackendEnum["NEW_ONE"]
    assert AttentionBackendEnum["NEW_ONE"] is backend
    AttentionBackendEnum.refresh()
    assert AttentionBackendEnum["NEW_ONE"] is not backend
    assert AttentionBackendEnum["NEW_ONE"].get_path() == "plug.mod.Other"


def test_register_backend_replaces_a_plugin_backend(override):
    """A runtime registration replaces the path a plugin added."""
    backend = AttentionBackendEnum["NEW_ONE"]
    register_backend(backend, "plug.mod:Backend")
    assert backend.get_path() == "plug.mod.Backend"
    assert backend.is_overridden()


def test_register_backend_replaces_a_plugin_override(override):
    """A runtime registration of a built-in replaces the plugin's entry for it."""
    register_backend(AttentionBackendEnum.FLASH_ATTN, "plug.mod:Other")
    assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.Other"


def test_runtime_registration_survives_refresh(override):
    """refresh() keeps runtime registrations on top of plugin entries."""
    register_backend(AttentionBackendEnum.FLASH_ATTN, "plug.mod:Other")
    register_backend(AttentionBackendEnum.CUSTOM, "plug.mod.Backend")
    AttentionBackendEnum.refresh()
    assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.Other"
    assert AttentionBackendEnum.CUSTOM.get_path() == "plug.mod.Backend"


def test_refresh_finds_a_plugin_installed_since(plug):
    """A distribution installed after the first discovery appears at refresh()."""
    assert not AttentionBackendEnum.FLASH_ATTN.is_overridden()
    plug.dist("late", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    assert not AttentionBackendEnum.FLASH_ATTN.is_overridden()
    AttentionBackendEnum.refresh()
    assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.Backend"


def test_clear_override_removes_a_plugin_backend_until_refresh(override):
    """clear_override() on a new name removes it; the error says how to get it back."""
    AttentionBackendEnum["NEW_ONE"].clear_override()
    with pytest.raises(UnknownBackendError) as info:
        AttentionBackendEnum["NEW_ONE"]
    assert str(info.value) == (
        f"Unknown attention backend: 'NEW_ONE'. Valid options are: {BUILTINS}, NESTED\n"
        "'NEW_ONE' was removed with clear_override(); "
        "AttentionBackendEnum.refresh() discovers it again"
    )
    AttentionBackendEnum.refresh()
    assert AttentionBackendEnum["NEW_ONE"].get_path() == "plug.mod.Other"


def test_mla_plugins_are_separate(plug):
    """A plugin in the MLA group extends the MLA registry only."""
    plug.dist("mla-plug", entry_points={"attn.mla_prefill_backends": {"FAST": "plug.mod:Prefill"}})
    assert MLAPrefillBackendEnum["FAST"].get_class().__qualname__ == "Prefill"
    with pytest.raises(UnknownBackendError):
        AttentionBackendEnum["FAST"]


def test_case_sensitive_names(plug):
    """flash_attn is a new backend; FLASH_ATTN keeps its built-in class."""
    plug.dist("plug", entry_points=eps(flash_attn="plug.mod:Backend"))
    assert AttentionBackendEnum["flash_attn"].get_path() == "plug.mod.Backend"
    assert not AttentionBackendEnum.FLASH_ATTN.is_overridden()


def test_invalid_entry_point_leaves_the_others_working(plug):
    """A distribution's invalid entry points do not stop its valid ones."""
    plug.dist("plug", entry_points=eps(**{"bad-name": "plug.mod:Backend", "OK": "plug.mod:Other"}))
    with pytest.warns(RejectedPluginWarning) as caught:
        assert AttentionBackendEnum["OK"].get_path() == "plug.mod.Other"
    (warning,) = caught  # the entry point and that it is invalid, once each
    assert str(warning.message) == (
        "attention backend 'bad-name' from plug 1.0 (entry point 'plug.mod:Backend') is invalid: "
        "backend names must be Python identifiers; 'bad-name' is not available. "
        "Run 'attn doctor' for the fix."
    )


def test_rejected_override_of_a_member_without_default(plug):
    """A rejected plugin for CUSTOM (no default) is not said to leave a built-in in effect."""
    plug.dist("plug", entry_points=eps(CUSTOM="plug.mod:Backend"), requires=["attn>=99"])
    with pytest.warns(RejectedPluginWarning) as caught:
        assert AttentionBackendEnum["FLASH_ATTN"] is AttentionBackendEnum.FLASH_ATTN
    (warning,) = caught
    assert str(warning.message).endswith(
        "is incompatible: requires attn>=99, installed 0.1.0; 'CUSTOM' is not available. "
        "Run 'attn doctor' for the fix."
    )


def test_plugin_without_requirement_is_merged(plug):
    """A plugin declaring no requirement on attn is still used."""
    plug.dist("plug", entry_points=eps(FREE="plug.mod:Backend"), requires=[])
    assert AttentionBackendEnum["FREE"].get_path() == "plug.mod.Backend"


# -- unknown names ------------------------------------------------------------------


def test_unknown_name(override):
    """The error lists built-ins in enum order, then plugin names sorted."""
    with pytest.raises(UnknownBackendError) as info:
        AttentionBackendEnum["NOPE"]
    assert str(info.value) == (
        f"Unknown attention backend: 'NOPE'. Valid options are: {BUILTINS}, NESTED, NEW_ONE"
    )
    assert isinstance(info.value, AttnError)
    assert isinstance(info.value, ValueError)


def test_unknown_mla_name():
    """The MLA registry names itself in the error."""
    with pytest.raises(ValueError, match=r"^Unknown MLA prefill backend: 'NOPE'\. ") as info:
        MLAPrefillBackendEnum["NOPE"]
    assert str(info.value) == (
        f"Unknown MLA prefill backend: 'NOPE'. Valid options are: {MLA_BUILTINS}"
    )


def test_unknown_name_suggests_close_matches():
    """A near-miss suggests the names it is close to."""
    with pytest.raises(UnknownBackendError) as info:
        AttentionBackendEnum["FLASH_ATN"]
    assert str(info.value) == (
        f"Unknown attention backend: 'FLASH_ATN'. Valid options are: {BUILTINS}\n"
        "Did you mean 'FLASH_ATTN', 'FLASH_ATTN_MLA' or 'FLASH_SINK_ATTN'?"
    )


def test_close_matches_keep_names_that_differ_by_case(plug):
    """With flash_attn installed, FLASH_ATN still suggests the built-in FLASH_ATTN."""
    plug.dist("plug", entry_points=eps(flash_attn="plug.mod:Backend"))
    with pytest.raises(UnknownBackendError) as info:
        AttentionBackendEnum["FLASH_ATN"]
    assert "'FLASH_ATTN'" in str(info.value).splitlines()[-1]


def test_unknown_name_of_a_rejected_plugin(plug):
    """A name a plugin provides but that was not merged says why and cites doctor, no suggestion."""
    plug.dist("plug", entry_points=eps(NEW_ONE="plug.mod:Backend"), requires=["attn>=9.0"])
    with (
        pytest.warns(RejectedPluginWarning, match="'NEW_ONE' from plug 1.0"),
        pytest.raises(UnknownBackendError) as info,
    ):
        AttentionBackendEnum["NEW_ONE"]
    assert str(info.value) == (
        f"Unknown attention backend: 'NEW_ONE'. Valid options are: {BUILTINS}\n"
        "plug 1.0 provides 'NEW_ONE' = 'plug.mod:Backend' but is incompatible: "
        f"requires attn>=9.0, installed {VERSION}\n"
        "Run 'attn doctor' for the fix."
    )


def test_unknown_name_with_plugins_disabled(plug, monkeypatch):
    """With ATTN_DISABLE_PLUGINS, the error says plugins are off."""
    plug.dist("plug", entry_points=eps(NEW_ONE="plug.mod:Backend"))
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    with pytest.raises(UnknownBackendError) as info:
        AttentionBackendEnum["NEW_ONE"]
    assert str(info.value) == (
        f"Unknown attention backend: 'NEW_ONE'. Valid options are: {BUILTINS}\n"
        "Plugins are disabled by ATTN_DISABLE_PLUGINS; unset it to use installed plugins"
    )


def test_plugins_disabled_reads_no_metadata(plug, monkeypatch, metadata_reads):
    """With ATTN_DISABLE_PLUGINS, lookups and listings never search installed metadata."""
    plug.dist("plug", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    assert AttentionBackendEnum["FLASH_ATTN"].get_path() == (
        "attn.backends.attention.FlashAttentionBackend"
    )
    assert build_report(MLAPrefillBackendEnum).plugins == ()
    assert metadata_reads == []
    monkeypatch.delenv("ATTN_DISABLE_PLUGINS")
    AttentionBackendEnum.refresh()
    assert AttentionBackendEnum["FLASH_ATTN"].get_path() == "plug.mod.Backend"
    assert len(metadata_reads) > 0


def test_selection_disables_the_others(plug, monkeypatch):
    """With ATTN_PLUGINS, only the selected distributions' backends exist."""
    plug.dist("Attn_Plug_A", entry_points=eps(A="plug.mod:Backend"))
    plug.dist("attn-plug-b", entry_points=eps(B="plug.mod:Other"))
    monkeypatch.setenv("ATTN_PLUGINS", "attn.plug.a")
    assert AttentionBackendEnum["A"].get_path() == "plug.mod.Backend"
    with pytest.raises(UnknownBackendError) as info:
        AttentionBackendEnum["B"]
    assert str(info.value).splitlines()[1] == (
        "attn-plug-b 1.0 provides 'B' = 'plug.mod:Other' but is disabled: not selected by "
        "ATTN_PLUGINS=attn.plug.a (export ATTN_PLUGINS=attn.plug.a,attn-plug-b to use it)"
    )


# -- loading failures ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "detail", "cause"),
    [
        ("plug.boom:Backend", "RuntimeError: no GPU found", RuntimeError),
        (
            "plug.mod:Missing",
            "AttributeError: module 'plug.mod' has no attribute 'Missing'",
            AttributeError,
        ),
        ("plug.mod:not_a_class", "'plug.mod:not_a_class' is not a class but int 3", None),
        (
            "plug.mod:NotABackend",
            "NotABackend does not derive from attn.backends.AttentionBackend",
            None,
        ),
        (
            "plug.mod:Prefill",
            "Prefill does not derive from attn.backends.AttentionBackend",
            None,
        ),
    ],
)
def test_get_class_failure(plug, value, detail, cause):
    """A plugin that cannot load raises an AttnError and ImportError naming everything."""
    plug.module("plug.boom", "raise RuntimeError('no GPU found')\n")
    plug.dist("attn-plug", "1.2", entry_points=eps(FLASH_ATTN=value))
    member = AttentionBackendEnum.FLASH_ATTN
    assert member.get_path() == value.replace(":", ".")
    with pytest.raises(BackendLoadError) as info:
        member.get_class()
    assert str(info.value) == (
        f"Cannot load attention backend 'FLASH_ATTN' from attn-plug 1.2, entry point "
        f"{value!r} (path {value!r}): {detail}. Fix or uninstall attn-plug, or block it with "
        "export ATTN_BLOCK_PLUGINS=attn-plug"
    )
    assert isinstance(info.value, AttnError)
    assert isinstance(info.value, ImportError)
    if cause is None:
        assert info.value.__cause__ is None
    else:
        assert type(info.value.__cause__) is cause


def test_a_broken_plugin_does_not_break_the_others(plug):
    """One plugin failing to load leaves every other backend usable."""
    plug.module("plug.boom", "raise RuntimeError('no GPU found')\n")
    plug.dist("broken", entry_points=eps(BROKEN="plug.boom:Backend"))
    plug.dist("fine", entry_points=eps(FINE="plug.mod:Backend"))
    with pytest.raises(BackendLoadError):
        AttentionBackendEnum["BROKEN"].get_class()
    assert AttentionBackendEnum["FINE"].get_class().__qualname__ == "Backend"
    assert AttentionBackendEnum.TORCH_SDPA.get_class().__name__ == "TorchSDPABackend"


# -- conflicts and strict mode --------------------------------------------------------


def test_conflict_warns_on_first_use_and_on_refresh(plug):
    """Two distributions claiming a name warn at the merge; the earlier name wins."""
    plug.dist("zed", entry_points=eps(FLASH_ATTN="plug.mod:Other"))
    plug.dist("alpha", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    with pytest.warns(
        ConflictWarning,
        match=r"export ATTN_PREFER=alpha keeps alpha, export ATTN_PREFER=zed makes zed win",
    ):
        assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.Backend"
    with pytest.warns(ConflictWarning, match=r"provided by 2 distributions \(alpha 1\.0"):
        AttentionBackendEnum.refresh()


def test_conflict_across_sys_path(sites, plugin_source):
    """The distribution earlier on sys.path wins, whatever its name."""
    first, second = sites.new("first"), sites.new("second")
    first.module("plug.mod", plugin_source)
    second.dist("alpha", entry_points=eps(FLASH_ATTN="plug.mod:Other"))
    first.dist("zed", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    with pytest.warns(ConflictWarning):
        assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.Backend"


def test_strict_mode_fails_every_access_until_fixed(plug, monkeypatch):
    """Under ATTN_STRICT=1 a plugin problem fails each access; uninstalling it fixes that."""
    info = plug.dist("plug", entry_points=eps(FLASH_ATTN="plug.mod:Backend"), requires=["attn>=9"])
    monkeypatch.setenv("ATTN_STRICT", "1")
    for touch in (
        lambda: AttentionBackendEnum["FLASH_ATTN"],
        AttentionBackendEnum.FLASH_ATTN.get_path,
        AttentionBackendEnum.FLASH_ATTN.is_overridden,
    ):
        with pytest.raises(
            PluginProblemError, match=re.escape(f"requires attn>=9, installed {VERSION}")
        ):
            touch()
    (info / "entry_points.txt").unlink()
    assert AttentionBackendEnum.FLASH_ATTN.get_path() == (
        "attn.backends.attention.FlashAttentionBackend"
    )


@pytest.mark.parametrize("variable", ["ATTN_STRICT", "ATTN_DISABLE_PLUGINS"])
def test_bad_control_value_fails_lookups(monkeypatch, variable):
    """A boolean control with a value that is not a boolean fails with its name."""
    monkeypatch.setenv(variable, "sometimes")
    with pytest.raises(AttnConfigError) as info:
        AttentionBackendEnum["FLASH_ATTN"]
    assert str(info.value) == (
        f"Invalid value for {variable}: 'sometimes'; "
        "expected one of 1, true, yes, on, 0, false, no, off"
    )


def test_strict_conflict_raises(plug, monkeypatch):
    """Under ATTN_STRICT=1 a conflict raises instead of warning."""
    plug.dist("alpha", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    plug.dist("zed", entry_points=eps(FLASH_ATTN="plug.mod:Other"))
    monkeypatch.setenv("ATTN_STRICT", "yes")
    with pytest.raises(PluginProblemError, match="'FLASH_ATTN' is provided by 2 distributions"):
        AttentionBackendEnum["FLASH_ATTN"]


# -- listing --------------------------------------------------------------------------


def test_listing_imports_no_plugin_module(site, tmp_path, plugin_source):
    """Building both registries' listings imports no plugin module."""
    sentinel = tmp_path / "imported"
    site.module(
        "sentinel_plugin.backends",
        f"import pathlib\npathlib.Path({str(sentinel)!r}).write_text('imported')\n" + plugin_source,
    )
    site.dist(
        "sentinel-plugin",
        entry_points={
            GROUP: {
                "FLASH_ATTN": "sentinel_plugin.backends:Backend",
                "NEW_ONE": "sentinel_plugin.backends:Other",
            },
            "attn.mla_prefill_backends": {"CPU": "sentinel_plugin.backends:Prefill"},
        },
    )
    reports = [build_report(AttentionBackendEnum), build_report(MLAPrefillBackendEnum)]
    assert [len(r.plugins) for r in reports] == [2, 1]
    assert not sentinel.exists()
    assert "sentinel_plugin.backends" not in sys.modules
    assert attn.AttentionBackendEnum.FLASH_ATTN.get_class().__module__ == "sentinel_plugin.backends"
    assert sentinel.exists()
