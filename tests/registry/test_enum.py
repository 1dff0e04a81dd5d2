"""A second registry, declared here with its own group, host and noun, gets every behaviour."""

from __future__ import annotations

import copy
import enum
import pickle
import warnings
from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import pytest

import attn
from attn.registry import (
    AttnError,
    Backend,
    BackendEnum,
    BackendInterfaceError,
    BackendLoadError,
    BackendNotRegisteredError,
    InvalidPathError,
    PluginBackend,
    UnknownBackendError,
    build_report,
    register,
)
from attn.registry.enum import state_of
from attn.registry.errors import ConflictWarning, PluginWarning, RejectedPluginWarning


class ToyBackend(Backend):
    """The interface of toy backends."""


class FastToy(ToyBackend):
    requires = ("toy-kernels",)


class SlowToy(ToyBackend):
    pass


class Outer:
    class NestedToy(ToyBackend):
        pass


class NotAToy:
    pass


class ToyBackendEnum(
    BackendEnum,
    group="toy.backends",
    host="toy",
    interface=ToyBackend,
    noun="toy backend",
):
    FAST = f"{__name__}:FastToy"
    SLOW = f"{__name__}.SlowToy"
    CUSTOM = None


@pytest.fixture(autouse=True)
def _reset_toy() -> Iterator[None]:
    state_of(ToyBackendEnum).reset()
    yield
    state_of(ToyBackendEnum).reset()


@pytest.fixture
def toy_env(site, monkeypatch):
    """The toy host installed (version 2.0) and TOY_* unset."""
    for name in ("TOY_DISABLE_PLUGINS", "TOY_PLUGINS", "TOY_STRICT"):
        monkeypatch.delenv(name, raising=False)
    site.dist("toy", "2.0", requires=())
    return site


def test_members_are_a_real_enum():
    """Members iterate, count and compare like any Enum's."""
    assert [m.name for m in ToyBackendEnum] == ["FAST", "SLOW", "CUSTOM"]
    assert len(ToyBackendEnum) == 3
    assert isinstance(ToyBackendEnum.FAST, enum.Enum)
    assert ToyBackendEnum.CUSTOM.value is None


def test_attribute_access_does_not_discover():
    """Plain attribute access and iteration leave the registry undiscovered."""
    _ = ToyBackendEnum.FAST
    list(ToyBackendEnum)
    assert not state_of(ToyBackendEnum).discovered_yet


def test_lookup_by_name_discovers(toy_env):
    """Name lookup returns the member and runs discovery."""
    assert ToyBackendEnum["FAST"] is ToyBackendEnum.FAST
    assert state_of(ToyBackendEnum).discovered_yet


def test_unknown_name_uses_the_registry_noun(toy_env):
    """The unknown-name error speaks of the registry's own noun and names."""
    with pytest.raises(UnknownBackendError) as info:
        ToyBackendEnum["NOPE"]
    assert str(info.value) == "Unknown toy backend: 'NOPE'. Valid options are: FAST, SLOW, CUSTOM"
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, AttnError)


def test_get_path_and_class_of_defaults(toy_env):
    """Defaults resolve to dotted paths and to the classes, whichever form was declared."""
    assert ToyBackendEnum.FAST.get_path() == f"{__name__}.FastToy"
    assert ToyBackendEnum.SLOW.get_path() == f"{__name__}.SlowToy"
    assert ToyBackendEnum.FAST.get_path(include_classname=False) == __name__
    assert ToyBackendEnum.FAST.get_class() is FastToy
    assert not ToyBackendEnum.FAST.is_overridden()


def test_custom_must_be_registered_first(toy_env):
    """A member without a default raises a ValueError saying how to register it."""
    with pytest.raises(BackendNotRegisteredError) as info:
        ToyBackendEnum.CUSTOM.get_path()
    message = str(info.value)
    assert message.startswith("ToyBackendEnum.CUSTOM has no default toy backend")
    assert "'toy.backends'" in message
    assert isinstance(info.value, ValueError)
    with pytest.raises(BackendNotRegisteredError):
        ToyBackendEnum.CUSTOM.get_class()


def test_runtime_registration_cycle(toy_env):
    """Register, override, clear: the member returns to its default."""
    register(ToyBackendEnum.FAST, f"{__name__}:Outer.NestedToy")
    assert ToyBackendEnum.FAST.is_overridden()
    assert ToyBackendEnum.FAST.get_path() == f"{__name__}.Outer.NestedToy"
    assert ToyBackendEnum.FAST.get_path(include_classname=False) == __name__
    assert ToyBackendEnum.FAST.get_class() is Outer.NestedToy
    ToyBackendEnum.FAST.clear_override()
    assert not ToyBackendEnum.FAST.is_overridden()
    assert ToyBackendEnum.FAST.get_class() is FastToy


def test_decorator_refuses_local_classes(toy_env):
    """A class defined inside a function cannot be registered by the decorator."""
    decorate = register(ToyBackendEnum.CUSTOM)

    class Local(ToyBackend):
        pass

    with pytest.raises(InvalidPathError, match="inside a function"):
        decorate(Local)
    assert not ToyBackendEnum.CUSTOM.is_overridden()


def module_level_function() -> None:
    """Not a backend: the decorator refuses it."""


@pytest.mark.parametrize("decorated", [module_level_function, 42])
def test_decorator_refuses_what_is_not_a_class(toy_env, decorated):
    """A function (or anything else) decorated is refused at once, not when its class is asked."""
    with pytest.raises(TypeError, match=r"^the registration decorator takes a class, not "):
        register(ToyBackendEnum.CUSTOM)(decorated)
    assert not ToyBackendEnum.CUSTOM.is_overridden()


def test_decorator_records_module_level_class(toy_env):
    """Decorating a module-level class registers it under module:qualname."""
    returned = register(ToyBackendEnum.CUSTOM)(Outer.NestedToy)
    assert returned is Outer.NestedToy
    assert ToyBackendEnum.CUSTOM.get_path() == f"{__name__}.Outer.NestedToy"
    assert ToyBackendEnum.CUSTOM.get_path(include_classname=False) == __name__
    assert ToyBackendEnum.CUSTOM.is_overridden()


def test_direct_registration_returns_identity(toy_env):
    """A direct registration returns a function that hands back what it is given."""
    identity = register(ToyBackendEnum.CUSTOM, f"{__name__}.SlowToy")
    assert identity(FastToy) is FastToy
    assert ToyBackendEnum.CUSTOM.get_class() is SlowToy


def test_registration_refuses_malformed_path(toy_env):
    """A malformed path is refused at registration, not at first use."""
    with pytest.raises(InvalidPathError):
        register(ToyBackendEnum.CUSTOM, "no_module_part")
    assert not ToyBackendEnum.CUSTOM.is_overridden()


def test_registration_refuses_members_of_other_registries(toy_env):
    """A registry's own register function takes only its members (and plugin backends)."""
    with pytest.raises(TypeError, match="expected a member of AttentionBackendEnum"):
        attn.register_backend(ToyBackendEnum.CUSTOM, f"{__name__}:SlowToy")  # type: ignore[arg-type]
    assert not ToyBackendEnum.CUSTOM.is_overridden()


def test_registration_refuses_what_is_not_a_backend():
    """The generic register names what it got when that is no registry's backend."""
    with pytest.raises(TypeError, match=r"expected a member of a registry .*, got 'FAST'"):
        register("FAST", f"{__name__}:SlowToy")  # type: ignore[arg-type]


def test_registration_names_the_caller(toy_env):
    """A direct registration records the module that called register, as listings show."""
    register(ToyBackendEnum.CUSTOM, f"{__name__}:SlowToy")
    assert state_of(ToyBackendEnum).lookup("CUSTOM").registered_by == __name__


def test_get_class_checks_the_interface(toy_env):
    """A registered class that is not a ToyBackend fails to load with an attn error."""
    register(ToyBackendEnum.CUSTOM, f"{__name__}:NotAToy")
    with pytest.raises(BackendInterfaceError) as info:
        ToyBackendEnum.CUSTOM.get_class()
    assert isinstance(info.value, ImportError)
    assert "does not derive from test_enum.ToyBackend" in str(info.value)
    assert info.value.backend == "CUSTOM"


def test_plugins_of_its_own_group(toy_env):
    """Entry points of the registry's own group are merged; attn's groups are not."""
    toy_env.dist(
        "toy-plugin",
        "1.0",
        entry_points={
            "toy.backends": {"FAST": f"{__name__}:SlowToy", "EXTRA": f"{__name__}:FastToy"},
            "attn.backends": {"ONLY_ATTN": f"{__name__}:FastToy"},
        },
        requires=["toy>=1.0"],
    )
    assert ToyBackendEnum.FAST.get_class() is SlowToy
    extra = ToyBackendEnum["EXTRA"]
    assert isinstance(extra, PluginBackend)
    assert extra.name == "EXTRA"
    assert extra.get_class() is FastToy
    assert ToyBackendEnum["EXTRA"] is extra
    with pytest.raises(UnknownBackendError):
        ToyBackendEnum["ONLY_ATTN"]


def test_a_plugins_backend_as_an_attribute_says_to_index(toy_env):
    """ToyBackendEnum.EXTRA, for a name only a plugin adds: the error says how to ask for it."""
    toy_env.dist(
        "toy-plugin", "1.0", entry_points={"toy.backends": {"EXTRA": f"{__name__}:FastToy"}}
    )
    assert ToyBackendEnum.FAST is ToyBackendEnum["FAST"]  # members stay attributes
    with pytest.raises(AttributeError) as info:
        ToyBackendEnum.EXTRA  # noqa: B018 - the mistake under test
    assert str(info.value) == (
        "type object 'ToyBackendEnum' has no attribute 'EXTRA'; a backend a plugin adds is no "
        "attribute: use ToyBackendEnum['EXTRA']"
    )
    with pytest.raises(AttributeError) as info:
        ToyBackendEnum.NOTHING  # noqa: B018 - a name nobody provides: the error Python gives
    assert str(info.value) == "type object 'ToyBackendEnum' has no attribute 'NOTHING'"
    assert (info.value.name, info.value.obj) == ("NOTHING", ToyBackendEnum)  # for suggestions
    assert not hasattr(ToyBackendEnum, "_EXTRA")


def test_host_requirement_is_the_registry_host(toy_env):
    """The version check reads the plugin's requirement on the registry's host."""
    toy_env.dist(
        "toy-future",
        "1.0",
        entry_points={"toy.backends": {"FUTURE": f"{__name__}:FastToy"}},
        requires=["toy>=3"],
    )
    with (
        pytest.warns(RejectedPluginWarning, match="'FUTURE' from toy-future 1.0"),
        pytest.raises(UnknownBackendError) as info,
    ):
        ToyBackendEnum["FUTURE"]
    assert (
        f"toy-future 1.0 provides 'FUTURE' = '{__name__}:FastToy' but is incompatible: requires "
        "toy>=3, "
        "installed 2.0" in str(info.value)
    )


def test_controls_use_the_registry_prefix(toy_env, monkeypatch):
    """TOY_DISABLE_PLUGINS turns the toy registry's discovery off."""
    toy_env.dist(
        "toy-plugin",
        "1.0",
        entry_points={"toy.backends": {"FAST": f"{__name__}:SlowToy"}},
        requires=["toy>=1.0"],
    )
    monkeypatch.setenv("TOY_DISABLE_PLUGINS", "1")
    assert ToyBackendEnum.FAST.get_class() is FastToy
    report = build_report(ToyBackendEnum)
    assert report.plugins_disabled
    assert report.plugins == ()


def test_listing_records(toy_env):
    """build_report renders the registry's rows from the same state."""
    register(ToyBackendEnum.SLOW, f"{__name__}:FastToy")
    rows = {row.name: row for row in build_report(ToyBackendEnum).backends}
    assert rows["FAST"].origin == "builtin"
    assert rows["FAST"].requires == ("toy-kernels",)
    assert rows["FAST"].available is False
    assert rows["SLOW"].origin == "runtime"
    assert rows["SLOW"].overridden is True
    assert rows["SLOW"].registered_by == __name__
    assert rows["CUSTOM"].status == "unregistered"
    assert rows["CUSTOM"].path is None


def test_refresh_is_a_classmethod_that_keeps_registrations(toy_env):
    """refresh() runs discovery again and keeps runtime registrations."""
    register(ToyBackendEnum.CUSTOM, f"{__name__}:SlowToy")
    ToyBackendEnum.refresh()
    assert ToyBackendEnum.CUSTOM.get_class() is SlowToy


def test_duplicate_values_are_refused():
    """Two members with one value would alias each other; the metaclass refuses them."""
    with pytest.raises(TypeError, match=r"distinct values, but B repeats the value of A$"):

        class _Aliased(BackendEnum, group="dup.backends", host="dup", interface=ToyBackend):
            A = "m:C"
            B = "m:C"

    with pytest.raises(TypeError, match=r"B repeats the value of A and C repeats the value of A$"):

        class _Twice(BackendEnum, group="dup2.backends", host="dup2", interface=ToyBackend):
            A = "m:C"
            B = "m:C"
            C = "m:C"


def test_malformed_member_values_are_refused():
    """A member value that is not a class path fails at class creation, naming the member."""
    with pytest.raises(InvalidPathError, match=r"no module part; .* \(the value of _Bad\.B\)$"):

        class _Bad(BackendEnum, group="bad.backends", host="bad", interface=ToyBackend):
            A = "m:C"
            B = "not a path"


def test_members_need_a_group():
    """Members without registry keywords are a declaration error."""
    with pytest.raises(TypeError, match="no entry-point group"):

        class _NoGroup(BackendEnum):
            A = "m:C"


def test_group_needs_a_host():
    """A group alone is not enough: the version check needs the host distribution."""
    with pytest.raises(TypeError, match=r"must declare host=\.\.\."):

        class _NoHost(BackendEnum, group="nohost.backends"):
            A = "m:C"


@pytest.mark.parametrize(("group", "host"), [(5, "numhost"), ("num.backends", 5)])
def test_a_group_or_host_that_is_no_string_is_refused_at_declaration(group, host):
    """Untyped code passing another type is told at once, not at the first lookup."""
    with pytest.raises(TypeError, match=r"^_Num must declare host=\.\.\. .* with group=\.\.\.$"):

        class _Num(BackendEnum, group=group, host=host):
            A = "m:C"


class MinimalEnum(BackendEnum, group="minimal.backends", host="minimal"):
    """A registry declared with only a group and a host."""

    FAST = f"{__name__}:FastToy"
    PLAIN = f"{__name__}:NotAToy"


def test_interface_defaults_to_the_core_backend():
    """Without interface=, any subclass of attn.registry.Backend loads; other classes do not."""
    state_of(MinimalEnum).reset()
    assert MinimalEnum.FAST.get_class() is FastToy
    with pytest.raises(BackendInterfaceError, match=r"does not derive from attn\.registry"):
        MinimalEnum.PLAIN.get_class()
    assert str(state_of(MinimalEnum).config.noun) == "minimal backend"
    state_of(MinimalEnum).reset()


def test_an_interface_path_that_fails_to_import_is_the_hosts_error(site):
    """interface= as a path whose module raises: every load says so with the host's fix."""
    site.module("ifc_broken_zz", "import no_such_dependency_zz\n")

    class _Lazy(BackendEnum, group="lazyifc.backends", host="lazyifc", interface="ifc_broken_zz:I"):
        FAST = f"{__name__}:FastToy"

    with pytest.raises(BackendLoadError) as info:
        _Lazy.FAST.get_class()
    assert str(info.value).endswith(
        f"(path '{__name__}:FastToy'): its registry's interface 'ifc_broken_zz:I' "
        "cannot be imported: ModuleNotFoundError: No module named 'no_such_dependency_zz'. "
        "Fix the interface= of _Lazy (lazyifc's code)"
    )
    (row,) = build_report(_Lazy, load=True).backends  # listing shows it, as any load failure
    assert row.status == "broken"
    assert "its registry's interface 'ifc_broken_zz:I' cannot be imported" in str(row.reason)


def test_an_interface_that_cannot_be_one_is_refused_at_declaration():
    """A malformed interface path, or an interface that is no class, fails as a bad member does."""
    with pytest.raises(
        InvalidPathError, match=r"no module part; .* \(the value of _Path's interface=\)$"
    ):

        class _Path(BackendEnum, group="badifc.backends", host="badifc", interface="nosuch"):
            A = "m:C"

    with pytest.raises(TypeError, match=r"^_Int: interface= takes a class or a 'module:Qual"):

        class _Int(BackendEnum, group="badifc2.backends", host="badifc2", interface=5):  # type: ignore[call-arg]
            A = "m:C"


class Runnable(Protocol):
    def run(self) -> None: ...


@runtime_checkable
class Timed(Protocol):
    speed: int


class RunsToy(Runnable):
    def run(self) -> None: ...


class TimedToy(Timed):
    speed = 1


@pytest.mark.parametrize(("interface", "heir"), [(Runnable, RunsToy), (Timed, TimedToy)])
def test_a_protocol_interface_loads_the_classes_that_derive_from_it(interface, heir):
    """A Protocol issubclass() refuses (not runtime-checkable, or with data): inheritance counts."""

    class _Proto(BackendEnum, group="proto.backends", host="proto", interface=interface):
        HEIR = f"{__name__}:{heir.__qualname__}"
        OTHER = f"{__name__}:NotAToy"

    assert _Proto.HEIR.get_class() is heir
    with pytest.raises(BackendInterfaceError, match="NotAToy"):  # an interface error all the same
        _Proto.OTHER.get_class()


def test_state_of_refuses_non_registries():
    """state_of names what it was given when that is not a registry."""
    with pytest.raises(TypeError, match="is not a registry"):
        state_of(BackendEnum)


def test_snapshot_is_a_copy(toy_env):
    """A snapshot does not change when the registry does."""
    register(ToyBackendEnum.CUSTOM, f"{__name__}:SlowToy")
    snap = state_of(ToyBackendEnum).snapshot()
    ToyBackendEnum.CUSTOM.clear_override()
    assert "CUSTOM" in snap.table
    assert "CUSTOM" in snap.runtime
    assert "CUSTOM" not in state_of(ToyBackendEnum).snapshot().table


@pytest.mark.parametrize("name", ["VENDOR_FAST", "TRITON_ATTN_"])  # the second near built-ins
def test_unknown_name_declared_in_a_typo_group(site, name):
    """The unknown-name error cites an entry point in a misspelt group and points at doctor,
    with no near names: it has said where the name is."""
    site.dist("vendor-attn", "1.2", entry_points={"attn.backend": {name: "v:B"}})
    with (
        pytest.warns(RejectedPluginWarning, match="looks like a typo"),
        pytest.raises(ValueError, match=f"Unknown attention backend: '{name}'") as info,
    ):
        attn.AttentionBackendEnum[name]
    assert str(info.value).splitlines()[1:] == [
        (
            f"{name!r} = 'v:B' is declared by vendor-attn 1.2 in entry-point group 'attn.backend', "
            "which looks like a typo of 'attn.backends'; attn does not read that group"
        ),
        "Run 'attn doctor' for the fix.",
    ]


def test_unknown_name_beside_metadata_attn_cannot_read(site):
    """With its warning filtered out, the unknown-name error still names the unreadable copies
    (one may declare the name) and points at doctor."""
    info = site.dist("vendor-attn", "1.2", entry_points={"attn.backends": {"V": "v:B"}})
    (info / "entry_points.txt").write_bytes(b"[attn.backends]\nVENDOR_X = v:B \xff\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="Unknown attention backend: 'VENDOR_X'") as error:
            attn.AttentionBackendEnum["VENDOR_X"]
    assert str(error.value).splitlines()[1:] == [
        "'VENDOR_X' may be declared in metadata attn cannot read: vendor-attn",
        "Run 'attn doctor' for the fix.",
    ]


def test_a_built_in_a_plugin_overrides_in_a_typo_group_warns_that_it_stays(site):
    """An override in a misspelt group is not read: the lookup says so, never silently."""
    site.dist("vendor-attn", "1.2", entry_points={"attn.backend": {"FLASH_ATTN": "v:B"}})
    with pytest.warns(RejectedPluginWarning) as caught:
        path = attn.AttentionBackendEnum.FLASH_ATTN.get_path()
    assert path == "attn.backends.attention.FlashAttentionBackend"
    (message,) = [str(w.message) for w in caught]
    assert message.startswith(
        "vendor-attn 1.2 declares 'FLASH_ATTN' = 'v:B' in group 'attn.backend', which looks like a "
        "typo of 'attn.backends'; attn does not read it; rename the group to 'attn.backends' where "
    )


def test_a_name_a_rejected_plugin_declares_gets_its_reason_not_a_suggestion(site):
    """The reason a plugin's name is unknown is given; no 'Did you mean' a near built-in."""
    site.dist("plug", entry_points={"attn.backends": {"FLASH_ATTN2": "p:B"}}, requires=["attn>=99"])
    with pytest.warns(RejectedPluginWarning), pytest.raises(UnknownBackendError) as rejected:
        attn.AttentionBackendEnum["FLASH_ATTN2"]
    assert "plug 1.0 provides 'FLASH_ATTN2' = 'p:B' but is incompatible" in str(rejected.value)
    assert "Did you mean" not in str(rejected.value)
    with pytest.raises(UnknownBackendError, match="Did you mean 'FLASH_ATTN'"):
        attn.AttentionBackendEnum["FLASH_ATTN3"]


REGISTERING = """\
import attn
from attn import AttentionBackend


class B(AttentionBackend):
    pass


attn.register_backend(attn.AttentionBackendEnum.TORCH_SDPA, "regmod:B")


@attn.register_backend(attn.AttentionBackendEnum.TRITON_ATTN)
class C(AttentionBackend):
    pass
"""


def test_a_plugin_registering_another_name_is_warned_about_at_its_own_line(site):
    """The warning points at the plugin code that registered (both forms), not at attn."""
    module = site.module("regmod", REGISTERING)
    site.dist("regplug", entry_points={"attn.backends": {"REG": "regmod:B"}})
    with pytest.warns(PluginWarning) as record:
        attn.AttentionBackendEnum["REG"].get_class()
    lines = REGISTERING.splitlines()
    direct = lines.index('attn.register_backend(attn.AttentionBackendEnum.TORCH_SDPA, "regmod:B")')
    decorator = lines.index("@attn.register_backend(attn.AttentionBackendEnum.TRITON_ATTN)")
    assert [w.filename for w in record] == [str(module)] * 2
    assert record[0].lineno == direct + 1
    assert record[1].lineno in {decorator + 1, decorator + 2}  # the decorator, or its class


def test_the_warning_about_a_plugin_registering_another_name_names_the_class_it_registered(site):
    """The warning names the backend, the distribution and version, the value and what to do."""
    site.module("regmod", REGISTERING)
    site.dist("regplug", "2.0", entry_points={"attn.backends": {"REG": "regmod:B"}})
    with pytest.warns(PluginWarning) as record:
        attn.AttentionBackendEnum["REG"].get_class()
    message = str(record[0].message)
    assert "plugin code of regplug 2.0 registered attention backend 'TORCH_SDPA'" in message
    assert "this replaces it with 'regmod:B' past conflict checks" in message
    assert "Report it to the plugin's authors" in message


SELF_REGISTERING = """\
import attn
from attn import AttentionBackend


class First(AttentionBackend):
    pass


class Second(AttentionBackend):
    pass


attn.register_backend(attn.AttentionBackendEnum.FLASH_ATTN, "selfreg:Second")
"""


def test_a_plugin_registering_its_own_name_at_import_gets_one_class(site):
    """get_class() returns the class in effect after the import, at the first call too."""
    site.module("selfreg", SELF_REGISTERING)
    site.dist("selfreg", entry_points={"attn.backends": {"FLASH_ATTN": "selfreg:First"}})
    member = attn.AttentionBackendEnum.FLASH_ATTN
    first = member.get_class()
    assert first is member.get_class()
    assert (first.__name__, member.get_path()) == ("Second", "selfreg.Second")


API = [
    "clear_override",
    "env_prefix",
    "fingerprint",
    "get_class",
    "get_path",
    "group",
    "host",
    "is_overridden",
    "lookup",
    "name",
    "noun",
    "refresh",
    "value",
]


@pytest.mark.parametrize("name", API)
def test_members_that_shadow_the_registry_api_are_refused(name):
    """A member named like the registry's own API is a TypeError naming it, at class creation."""
    namespace = {"FAST": f"{__name__}:FastToy", name: f"{__name__}:SlowToy"}
    with pytest.raises(TypeError, match=f"^Shadow: member {name!r} would shadow Shadow.{name} "):
        type(BackendEnum)("Shadow", (BackendEnum,), _classdict(namespace), group="s.b", host="s")


def _classdict(members: dict[str, str]) -> object:
    classdict = type(BackendEnum).__prepare__("Shadow", (BackendEnum,))
    for key, value in members.items():
        classdict[key] = value
    return classdict


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"env_prefix": "pfx-host"}, "the prefix 'pfx-host' "),
        ({"env_prefix": "Q HOST"}, "the prefix 'Q HOST' "),
        ({"env_prefix": "1X"}, "the prefix '1X' "),
        ({"host": "my host", "env_prefix": ""}, "the prefix 'MY HOST' "),
    ],
)
def test_a_prefix_no_shell_can_export_is_refused(keywords, message):
    """A prefix its controls cannot be exported with is a ValueError at class creation."""
    keywords = {"host": "pfx-host"} | keywords
    message += r"\(env_prefix, else host\) cannot start a variable; pass env_prefix="
    with pytest.raises(ValueError, match=f"^Prefixed: {message}"):
        type(BackendEnum)("Prefixed", (BackendEnum,), _classdict({}), group="p.b", **keywords)


def test_the_refused_names_are_derived_from_the_classes():
    """Every public attribute of BackendEnum is refused, and so is one a host's base adds."""
    public = {n for k in (BackendEnum, type(BackendEnum)) for c in k.__mro__ for n in vars(c)}
    assert set(API) <= public

    class HostBase(BackendEnum):
        @classmethod
        def priorities(cls) -> list[str]:
            return []

    with pytest.raises(TypeError, match="member 'priorities' would shadow"):

        class _Shadow(HostBase, group="shadow.backends", host="shadow"):
            priorities = f"{__name__}:SlowToy"


@pytest.mark.parametrize(
    ("registry", "expected"),
    [
        (attn.AttentionBackendEnum, ("attn.backends", "attn", "attention backend", "ATTN")),
        (
            attn.MLAPrefillBackendEnum,
            ("attn.mla_prefill_backends", "attn", "MLA prefill backend", "ATTN"),
        ),
        (ToyBackendEnum, ("toy.backends", "toy", "toy backend", "TOY")),
        (MinimalEnum, ("minimal.backends", "minimal", "minimal backend", "MINIMAL")),
    ],
)
def test_a_registry_says_its_group_host_noun_and_prefix(registry, expected):
    """group, host, noun and env_prefix are the class keywords (or their defaults)."""
    assert (registry.group, registry.host, registry.noun, registry.env_prefix) == expected


@pytest.mark.parametrize("attribute", ["group", "host", "noun", "env_prefix"])
def test_the_registry_attributes_are_read_only(attribute):
    """They belong to the class, not to its members, and cannot be set."""
    with pytest.raises(AttributeError, match=attribute):  # Python's own words: no setter
        setattr(attn.AttentionBackendEnum, attribute, "other")
    assert not hasattr(attn.AttentionBackendEnum.FLASH_ATTN, attribute)
    assert not hasattr(BackendEnum, attribute)


@pytest.fixture
def vendor(plugin_module):
    """A plugin adding VENDOR to attn's attention registry."""
    plugin_module.dist("vendor-attn", entry_points={"attn.backends": {"VENDOR": "plug.mod:Other"}})
    return attn.AttentionBackendEnum["VENDOR"]


def test_a_plugin_backend_pickles_by_registry_and_name(vendor):
    """A pickle is small (registry and name, no discovery data) and loads as the same object."""
    data = pickle.dumps(vendor)
    assert len(data) < 150
    assert b"plug.mod" not in data
    assert pickle.loads(data) is vendor  # noqa: S301 - our own bytes


def test_plugin_backends_compare_by_registry_and_name(vendor):
    """After a refresh the new object is equal, with the same hash, and unequal to a member."""
    registry = attn.AttentionBackendEnum
    registry.refresh()
    again = registry["VENDOR"]
    assert again is not vendor
    assert again == vendor
    assert hash(again) == hash(vendor)
    assert again != registry.FLASH_ATTN
    assert vendor != "VENDOR"


def test_a_plugin_backend_is_read_only_and_copies_to_itself(vendor):
    """As a member: a key of dicts and sets cannot change, and a copy is the object itself."""
    with pytest.raises(AttributeError, match="read-only"):
        vendor.name = "OTHER"
    with pytest.raises(AttributeError, match="read-only"):
        del vendor.registry
    assert (vendor.name, vendor.registry) == ("VENDOR", attn.AttentionBackendEnum)
    vendor.clear_override()  # a lookup would fail now: copying does none
    assert copy.copy(vendor) is vendor
    assert copy.deepcopy([vendor])[0] is vendor


def test_a_plugin_backend_is_equal_to_the_one_another_process_looks_up(vendor, python, tmp_path):
    """Pickled here and loaded in another process (and back), it is that process's own backend."""
    (tmp_path / "here.pickle").write_bytes(pickle.dumps(vendor))
    code = (
        "import pathlib, pickle, attn\n"
        f"folder = pathlib.Path({str(tmp_path)!r})\n"
        "theirs = pickle.loads((folder / 'here.pickle').read_bytes())\n"
        "mine = attn.AttentionBackendEnum['VENDOR']\n"
        "print(theirs == mine, theirs is mine, theirs.get_path())\n"
        "(folder / 'there.pickle').write_bytes(pickle.dumps(mine))\n"
    )
    assert python.run("-c", code).stdout.split() == ["True", "True", "plug.mod.Other"]
    back = pickle.loads((tmp_path / "there.pickle").read_bytes())  # noqa: S301 - our own bytes
    assert back is vendor


def test_lookup_is_the_same_as_indexing(site):
    """Registry.lookup(name) returns what Registry[name] does: a member or a plugin backend."""
    site.dist("vendor-attn", entry_points={"attn.backends": {"VENDOR_FAST": "v:B"}})
    registry = attn.AttentionBackendEnum
    assert registry.lookup("FLASH_ATTN") is registry.FLASH_ATTN
    assert registry.lookup("VENDOR_FAST") is registry["VENDOR_FAST"]
    assert isinstance(registry.lookup("VENDOR_FAST"), attn.PluginBackend)
    with pytest.raises(attn.AttnError, match="Unknown attention backend: 'NOPE'"):
        registry.lookup("NOPE")


@pytest.mark.parametrize("name", [3, None, ["FAST"], ("FAST",)])
def test_a_name_that_is_no_string_is_unknown(toy_env, name):
    """Indexing with an int, None, a list or a tuple is the unknown-name error, not a TypeError."""
    with pytest.raises(UnknownBackendError, match=r"Unknown toy backend: .*Valid options are: "):
        ToyBackendEnum[name]


def test_a_cleared_plugin_backend_is_unknown_with_how_to_get_it_back(toy_env):
    """After clear_override() of a plugin-added name, its error says so, not why it is unused."""
    eps = {"toy.backends": {"EXTRA": f"{__name__}:FastToy"}}
    toy_env.dist("toy-plugin", "1.0", entry_points=eps, requires=["toy>=1.0"])
    ToyBackendEnum["EXTRA"].clear_override()
    with pytest.raises(UnknownBackendError) as cleared:
        ToyBackendEnum["EXTRA"]
    message = str(cleared.value)
    assert "was removed with clear_override(); ToyBackendEnum.refresh() discovers it again" in (
        message
    )
    assert "is provided by" not in message
    ToyBackendEnum.refresh()
    assert ToyBackendEnum["EXTRA"].get_class() is FastToy


def test_a_cleared_name_another_plugin_also_claims_says_only_how_to_get_it_back(toy_env):
    """The shadowed claimant's line (naming the cleared winner) and doctor are left out."""
    for dist in ("toy-a", "toy-b"):
        eps = {"toy.backends": {"EXTRA": f"{__name__}:FastToy"}}
        toy_env.dist(dist, "1.0", entry_points=eps, requires=["toy>=1.0"])
    with pytest.warns(ConflictWarning):
        ToyBackendEnum["EXTRA"].clear_override()
    with pytest.raises(UnknownBackendError) as cleared:
        ToyBackendEnum["EXTRA"]
    assert str(cleared.value).splitlines()[1:] == [
        "'EXTRA' was removed with clear_override(); ToyBackendEnum.refresh() discovers it again"
    ]


def test_custom_a_plugin_provides_says_how_to_get_it_back_once_cleared(toy_env):
    """CUSTOM from a plugin, cleared: refresh() brings it back, not declaring an entry point."""
    eps = {"toy.backends": {"CUSTOM": f"{__name__}:FastToy"}}
    toy_env.dist("toy-custom", "1.0", entry_points=eps, requires=["toy>=1.0"])
    ToyBackendEnum.CUSTOM.clear_override()
    with pytest.raises(BackendNotRegisteredError) as cleared:
        ToyBackendEnum.CUSTOM.get_class()
    assert str(cleared.value) == (
        "toy backend 'CUSTOM' was removed with clear_override(); "
        "ToyBackendEnum.refresh() discovers it again"
    )
    ToyBackendEnum.refresh()
    assert ToyBackendEnum.CUSTOM.get_class() is FastToy


def test_a_stale_plugin_backend_cannot_add_its_name_back_by_registration(toy_env, monkeypatch):
    """A handle from an earlier discovery whose name no plugin provides now: the lookup's error."""
    eps = {"toy.backends": {"EXTRA": f"{__name__}:FastToy"}}
    toy_env.dist("toy-plugin", "1.0", entry_points=eps, requires=["toy>=1.0"])
    stale = ToyBackendEnum["EXTRA"]
    monkeypatch.setenv("TOY_BLOCK_PLUGINS", "toy-plugin")
    ToyBackendEnum.refresh()
    with pytest.raises(UnknownBackendError, match=r"^toy backend 'EXTRA' is no longer provided"):
        register(stale, f"{__name__}:SlowToy")
    assert "EXTRA" not in state_of(ToyBackendEnum).snapshot().table
    monkeypatch.delenv("TOY_BLOCK_PLUGINS")
    ToyBackendEnum.refresh()
    register(stale, f"{__name__}:SlowToy")  # provided again: the same name is accepted
    assert ToyBackendEnum["EXTRA"].get_class() is SlowToy


def test_custom_registered_and_cleared_with_no_plugin_says_how_to_register(toy_env):
    """Only a runtime registration was cleared: refresh() would bring nothing back."""
    register(ToyBackendEnum.CUSTOM, f"{__name__}:SlowToy")
    ToyBackendEnum.CUSTOM.clear_override()
    with pytest.raises(BackendNotRegisteredError, match=r"^ToyBackendEnum\.CUSTOM has no default"):
        ToyBackendEnum.CUSTOM.get_class()
