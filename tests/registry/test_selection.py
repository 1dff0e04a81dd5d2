"""Selection over a toy host's registry: order, fallback, explicit choice, reasons, cache."""

from __future__ import annotations

import enum
import multiprocessing
import pickle
import sys
import threading
import warnings
from collections.abc import Callable, Iterator

import pytest

import attn
from attn.registry import (
    AttnError,
    Backend,
    BackendEnum,
    BackendLoadError,
    UnknownBackendError,
    register,
)
from attn.registry.enum import state_of
from attn.registry.selection import (
    Selection,
    SelectionError,
    dtype_name,
    select,
)


class PickBackend(Backend):
    """The interface of the toy host's backends."""


class Accepts(PickBackend):
    """Accepts every setting: it has no validate_configuration."""


class CudaOnly(PickBackend):
    """Valid on device='cuda' only; records the settings it was asked about."""

    asked: list[dict[str, object]] = []  # noqa: RUF012 - a test's record

    @classmethod
    def validate_configuration(cls, **settings: object) -> list[str]:
        cls.asked.append(settings)
        return [] if settings.get("device") in {None, "cuda"} else ["CUDA only"]


class NeedsKernel(PickBackend):
    requires = ("pick-kernel-not-installed",)


class NeedsTwoKernels(PickBackend):
    requires = ("pick-kernel", "pick-other-kernel")


class PickEnum(BackendEnum, group="pick.backends", host="pick", interface=PickBackend):
    FIRST = f"{__name__}:CudaOnly"
    SECOND = f"{__name__}:NeedsKernel"
    THIRD = f"{__name__}:Accepts"
    CUSTOM = None

    @classmethod
    def priorities(cls, **settings: object) -> list[str]:
        """THIRD first on device='cpu', no THIRD on 'tpu', else the enum's order."""
        if settings.get("device") == "cpu":
            return ["THIRD", "FIRST"]
        if settings.get("device") == "tpu":
            return ["SECOND", "FIRST"]
        return ["FIRST", "SECOND", "THIRD"]


class ChecksEnum(BackendEnum, group="checks.backends", host="checks", interface=PickBackend):
    """No kernel package to miss: one class that checks, one that cannot be imported."""

    CHECKS = f"{__name__}:CudaOnly"
    GONE = "no_such_module_for_checks:Backend"


class PlainEnum(BackendEnum, group="plain.backends", host="plain", interface=PickBackend):
    """No priorities: every built-in in enum order."""

    ONE = f"{__name__}:NeedsKernel"
    TWO = f"{__name__}:Accepts"
    CUSTOM = None


#: A plugin module with one class of each behaviour selection has to survive.
PLUGIN = """\
from test_selection import PickBackend

class Good(PickBackend):
    pass

class Picky(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return ["head_size 7 is odd"] if settings.get("head_size") == 7 else []

class Raises(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        raise RuntimeError("boom")

class Interrupts(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        raise KeyboardInterrupt

class ReturnsNone(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return None

class ReturnsEmptyTuple(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return ()

class ReturnsTuple(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return ("head_size 7 is odd",)

class ReturnsBlankAndLines(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return ["", "too big\\n  FAKE (builtin): chosen"]

class ReturnsInts(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return [1, 2]

class ReturnsGenerator(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        yield "head_size 7 is odd"

class Text(str):
    pass

class ReturnsStrSubclass(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return [Text("sneaky   head size")]

class Reasons(list):
    pass

class ReturnsListSubclass(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return Reasons(["head_size 7 is odd"])

class NotABackend:
    pass

class Hostile(type):
    def __repr__(cls):
        raise RuntimeError("repr boom")

    def __eq__(cls, other):
        raise RuntimeError("eq boom")

    __hash__ = type.__hash__

class Odd(metaclass=Hostile):
    def __repr__(self):
        return "odd"

class MissingAsText(PickBackend):
    @classmethod
    def missing_requirements(cls):
        return "torch"

class MissingAsNone(PickBackend):
    @classmethod
    def missing_requirements(cls):
        return [None]

class MissingAsEmptyText(PickBackend):
    @classmethod
    def missing_requirements(cls):
        return ""

class ReturnsHostile(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return Odd()
"""


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    for registry in (PickEnum, PlainEnum):
        state_of(registry).reset()
    CudaOnly.asked.clear()
    yield
    for registry in (PickEnum, PlainEnum):
        state_of(registry).reset()


@pytest.fixture
def host(site):
    """The toy host installed, and a plugin module ``pickplug`` beside it."""
    site.dist("pick", "2.0", requires=())
    site.module("pickplug", PLUGIN)
    return site


def plugin(site, name="pick-plugin", **entry_points: str):
    """A plugin distribution of the toy host declaring *entry_points* (name = pickplug:Class)."""
    values = {key: f"pickplug:{value}" for key, value in entry_points.items()}
    site.dist(name, "1.5", entry_points={"pick.backends": values}, requires=("pick>=1",))
    PickEnum.refresh()


def rejected(registry, backend=None, **settings) -> SelectionError:
    with pytest.raises(SelectionError) as caught:
        select(registry, backend, **settings)
    return caught.value


# -- order ----------------------------------------------------------------------------------


def test_candidates_follow_the_hosts_order(host):
    """The first valid candidate of the host's order is chosen; earlier ones are rows."""
    chosen = select(PickEnum, device="rocm")
    assert chosen.name == "THIRD"
    assert chosen.backend is PickEnum.THIRD
    assert [(r.name, r.verdict) for r in chosen.tried] == [
        ("FIRST", "rejected"),
        ("SECOND", "rejected"),
        ("THIRD", "chosen"),
    ]
    assert select(PickEnum, device="cpu").tried[0].name == "THIRD"


def test_plugin_names_come_after_the_hosts_order_sorted(host):
    """New plugin names follow the host's order, sorted; an override keeps its name's slot."""
    plugin(host, ZED="Picky", ALPHA="Picky", SECOND="Picky")
    error = rejected(PickEnum, device="tpu", head_size=7)
    assert [(r.name, r.origin) for r in error.tried] == [
        ("SECOND", "plugin"),
        ("SECOND", "builtin"),
        ("FIRST", "builtin"),
        ("ALPHA", "plugin"),
        ("ZED", "plugin"),
    ]


def test_a_plugin_name_is_chosen_when_the_host_has_no_valid_candidate(host):
    """With every candidate of the host's order rejected, a plugin-added name is chosen."""
    plugin(host, ZED="Good", ALPHA="Picky")
    chosen = select(PickEnum, device="tpu", head_size=7)
    assert chosen.name == "ZED"
    assert chosen.backend is PickEnum.lookup("ZED")
    alpha, zed = chosen.tried[-2:]
    assert (alpha.name, alpha.reasons[0].message) == ("ALPHA", "head_size 7 is odd")
    assert (zed.origin, zed.distribution, zed.version) == ("plugin", "pick-plugin", "1.5")


def test_default_priorities_are_the_builtins_and_a_registered_custom():
    """Without a priorities classmethod: every built-in in enum order, CUSTOM once registered."""
    assert PlainEnum.priorities() == ["ONE", "TWO"]
    assert select(PlainEnum).name == "TWO"
    register(PlainEnum.CUSTOM, f"{__name__}:Accepts")
    assert PlainEnum.priorities() == ["ONE", "TWO", "CUSTOM"]


def test_an_unregistered_custom_in_the_hosts_order_is_a_rejected_row():
    """A name without any class is rejected with a reason, not an error."""

    class Listed(BackendEnum, group="listed.backends", host="listed", interface=PickBackend):
        CUSTOM = None

        @classmethod
        def priorities(cls, **_settings: object) -> list[str]:
            return ["CUSTOM"]

    error = rejected(Listed)
    assert [(r.name, r.origin, r.path, r.reasons[0].code) for r in error.tried] == [
        ("CUSTOM", "builtin", None, "unregistered")
    ]


def test_a_name_of_the_hosts_order_that_no_installed_plugin_adds_is_a_plugins_row():
    """A host may list a plugin's name; not installed, its row is rejected and says plugin."""

    class Optional(BackendEnum, group="optional.backends", host="optional", interface=PickBackend):
        ONE = f"{__name__}:Accepts"

        @classmethod
        def priorities(cls, **_settings: object) -> list[str]:
            return ["FAST_PLUGIN", "ONE"]

    first, chosen = select(Optional).tried
    assert (first.name, first.origin, first.distribution, first.path) == (
        "FAST_PLUGIN",
        "plugin",
        None,
        None,
    )
    assert str(first) == (
        "FAST_PLUGIN (plugin): rejected: nothing is registered for it and it has no default"
    )
    assert (chosen.name, chosen.origin, chosen.verdict) == ("ONE", "builtin", "chosen")


class Listing(BackendEnum, group="listing.backends", host="listing", interface=PickBackend):
    ONE = f"{__name__}:Accepts"

    @classmethod
    def priorities(cls, **_settings: object) -> list[str]:
        return ["FAST_PLUGIN", "ONE"]


@pytest.mark.parametrize(
    ("requires", "blocked", "reason"),
    [
        (("listing>=9",), "", "is incompatible: requires listing>=9, installed 1.0"),
        (
            ("listing>=1",),
            "fast-plugin",
            (  # with the unknown-name error's fix
                "is disabled: blocked by LISTING_BLOCK_PLUGINS=fast-plugin "
                "(unset LISTING_BLOCK_PLUGINS to use it)"
            ),
        ),
    ],
    ids=["incompatible", "blocked"],
)
def test_a_name_of_the_hosts_order_an_installed_plugin_claims_in_vain_says_why(
    site, monkeypatch, requires, blocked, reason
):
    """Installed but not in effect: the row names the plugin and why, as the unknown-name error."""
    monkeypatch.setenv("LISTING_BLOCK_PLUGINS", blocked)
    site.dist("listing", "1.0", requires=())
    site.dist("fast-plugin", "2.0", entry_points={"listing.backends": {"FAST_PLUGIN": "x:Y"}},
              requires=requires)  # fmt: skip
    state_of(Listing).reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = select(Listing).tried[0]
    assert (first.name, first.origin, first.reasons[0].code) == (
        "FAST_PLUGIN",
        "plugin",
        "unregistered",
    )
    assert (
        first.reasons[0].message == f"fast-plugin 2.0 provides 'FAST_PLUGIN' = 'x:Y' but {reason}"
    )


@pytest.mark.parametrize(
    ("how", "reasons"),
    [
        (
            "cleared",
            [
                (
                    "'FAST_PLUGIN' was removed with clear_override(); "
                    "Listing.refresh() discovers it again"
                )
            ],
        ),
        (
            "disabled",
            [
                "nothing is registered for it and it has no default",
                "plugins are disabled: unset LISTING_DISABLE_PLUGINS to use them",
            ],
        ),
    ],
)
def test_a_name_of_the_hosts_order_cleared_or_with_plugins_disabled_says_so(
    site, monkeypatch, how, reasons
):
    """As the unknown-name error: the clear_override() note alone, or that plugins are off."""
    monkeypatch.setenv("LISTING_BLOCK_PLUGINS", "")
    monkeypatch.setenv("LISTING_DISABLE_PLUGINS", "1" if how == "disabled" else "")
    site.dist("listing", "1.0", requires=())
    for dist in ("fast-plugin", "fast-rival"):  # a conflict: the shadowed one is no reason
        site.dist(dist, "2.0", entry_points={"listing.backends": {"FAST_PLUGIN": "x:Y"}},
                  requires=("listing>=1",))  # fmt: skip
    state_of(Listing).reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "cleared":
            assert select(Listing).tried[0].verdict == "rejected"  # x:Y cannot be imported
            Listing.lookup("FAST_PLUGIN").clear_override()
        first = select(Listing).tried[0]
    assert (first.name, first.origin) == ("FAST_PLUGIN", "plugin")
    assert [(r.code, r.message) for r in first.reasons] == [("unregistered", r) for r in reasons]


@pytest.mark.parametrize(
    ("returned", "shown"),
    [
        (lambda _: None, "None"),
        (lambda _: "ONE", "'ONE'"),
        (lambda cls: [cls.ONE], "[<Said.ONE: "),
        (lambda _: iter(["ONE"]), "<list_iterator object at "),
    ],
    ids=["none", "a-name", "members", "an-iterator"],
)
def test_priorities_that_are_not_a_list_of_names_are_the_hosts_error(returned, shown):
    """A host's priorities() returning no list of str: a TypeError saying what it returned."""

    class Said(BackendEnum, group="said.backends", host="said", interface=PickBackend):
        ONE = f"{__name__}:Accepts"

        @classmethod
        def priorities(cls, **_settings: object) -> object:
            return returned(cls)

    with pytest.raises(TypeError) as caught:
        select(Said)
    message = "Said.priorities() must return a list of names (str), not "
    assert str(caught.value).startswith(message + shown)


def test_priorities_may_return_str_subclasses_as_their_text():
    """numpy's str_ or a host's StrEnum of names is a str: select() reads the text."""

    class Name(str):
        __slots__ = ()

        def __str__(self) -> str:
            return "not this"

    class Names(str, enum.Enum):
        ONE = "ONE"

    class Names2(tuple):  # a tuple of another kind
        __slots__ = ()

    returns = {"subclass": [Name("ONE")], "enum": [Names.ONE], "tuple": Names2(["ONE"])}

    class Sub(BackendEnum, group="sub.backends", host="sub", interface=PickBackend):
        ONE = f"{__name__}:Accepts"

        @classmethod
        def priorities(cls, **settings: object) -> object:
            return returns[str(settings["kind"])]

    for kind in returns:
        chosen = select(Sub, kind=kind)
        assert [(type(c.name), c.name, c.verdict) for c in chosen.tried] == [(str, "ONE", "chosen")]


# -- the same name's built-in after a rejected override ---------------------------------------


def test_a_rejected_override_falls_back_to_the_builtin_in_the_same_slot(host):
    """The override's row, then the built-in default's row, marked as the fallback."""
    plugin(host, FIRST="Raises")
    chosen = select(PickEnum, device="cuda")
    first, fallback = chosen.tried
    assert (first.name, first.origin, first.verdict) == ("FIRST", "plugin", "rejected")
    assert first.path == "pickplug.Raises"
    assert (fallback.name, fallback.origin, fallback.verdict) == ("FIRST", "builtin", "chosen")
    assert fallback.fallback
    assert not first.fallback
    assert chosen.backend is PickEnum.FIRST
    assert chosen.backend_class is CudaOnly
    assert "its built-in default: the override was rejected" in str(chosen)


def test_an_accepted_override_is_chosen_and_the_builtin_never_imported(host):
    """The override in effect is tried first; when it is valid nothing else is tried."""
    plugin(host, FIRST="Good")
    chosen = select(PickEnum)
    assert [(r.origin, r.verdict) for r in chosen.tried] == [("plugin", "chosen")]
    assert chosen.backend_class.__name__ == "Good"


def test_a_rejected_override_that_cannot_load_raises_in_strict_mode(host, monkeypatch):
    """PICK_STRICT=1: a plugin's load failure raises where selection finds it, no fallback."""
    plugin(host, FIRST="NoSuchClass")
    assert select(PickEnum, device="cuda").tried[-1].fallback
    monkeypatch.setenv("PICK_STRICT", "1")
    PickEnum.refresh()
    with pytest.raises(BackendLoadError, match="NoSuchClass"):
        select(PickEnum, device="cuda")
    with pytest.raises(BackendLoadError, match="NoSuchClass"):
        select(PickEnum, "FIRST")


# -- stopping early -------------------------------------------------------------------------


def test_nothing_after_the_chosen_candidate_is_imported(site):
    """A sentinel module after the chosen candidate is never imported."""
    site.module("early.chosen", f"from {__name__} import PickBackend\nclass C(PickBackend): pass\n")
    site.module("early.sentinel", "raise RuntimeError('imported after the choice')\n")

    class Early(BackendEnum, group="early.backends", host="early", interface=PickBackend):
        A = "early.chosen:C"
        B = "early.sentinel:C"

    assert select(Early).name == "A"
    assert "early.chosen" in sys.modules
    assert "early.sentinel" not in sys.modules


# -- explicit choice ----------------------------------------------------------------------------


def test_an_explicit_choice_is_tried_alone():
    """backend= tries that name only, even where the host's order would choose another."""
    chosen = select(PickEnum, backend="FIRST", device="cuda")
    assert (chosen.name, chosen.explicit, len(chosen.tried)) == ("FIRST", True, 1)
    assert chosen.settings == (("device", "cuda"),)
    assert select(PickEnum, PickEnum.THIRD).name == "THIRD"


def test_a_rejected_explicit_choice_is_an_error_with_its_reasons():
    """Nothing else is chosen silently: SelectionError names the choice and its reasons."""
    with pytest.raises(SelectionError) as caught:
        select(PickEnum, "FIRST", device="tpu")
    error = caught.value
    assert isinstance(error, AttnError)
    assert isinstance(error, ValueError)
    assert error.explicit
    assert [r.name for r in error.tried] == ["FIRST"]
    assert str(error) == (
        "The pick backend 'FIRST' chosen explicitly is not valid in PickEnum for device='tpu':\n"
        "  FIRST (builtin): rejected: CUDA only\n"
        "Choose another; list the candidates with: attn select --set device=tpu "
        "--registry test_selection:PickEnum"
    )


def test_the_environment_variable_is_an_explicit_choice(monkeypatch):
    """<PREFIX>_<NOUN> chooses like backend=; the argument wins over it."""
    monkeypatch.setenv("PICK_PICK_BACKEND", "SECOND")
    error = rejected(PickEnum)
    assert error.explicit
    assert [r.name for r in error.tried] == ["SECOND"]
    assert error.tried[0].reasons[0].code == "missing-requirement"
    assert str(error).splitlines()[-1] == (  # the command lists the candidates once it is unset
        "Choose another, or unset PICK_PICK_BACKEND; then list the candidates with: attn select "
        "--registry test_selection:PickEnum"
    )
    assert select(PickEnum, "THIRD").name == "THIRD"
    monkeypatch.setenv("PICK_PICK_BACKEND", "")
    assert not select(PickEnum).explicit


def test_an_unknown_name_in_the_variable_says_the_variable_chose_it(monkeypatch):
    """A user who never typed the name learns where it came from; backend= says nothing of it."""
    monkeypatch.setenv("PICK_PICK_BACKEND", "FRIST")
    with pytest.raises(UnknownBackendError) as caught:
        select(PickEnum)
    assert str(caught.value).splitlines()[-2:] == [
        "Did you mean 'FIRST'?",
        "PICK_PICK_BACKEND='FRIST' chose it: fix or unset it",
    ]
    assert caught.value.name == "FRIST"
    with pytest.raises(UnknownBackendError) as caught:
        select(PickEnum, "FRIST")
    assert "PICK_PICK_BACKEND" not in str(caught.value)


def test_the_variable_is_read_without_surrounding_spaces(monkeypatch):
    monkeypatch.setenv("PICK_PICK_BACKEND", " THIRD ")
    assert (select(PickEnum).name, select(PickEnum).explicit) == ("THIRD", True)


def test_a_rejected_backend_argument_does_not_ask_to_unset_the_variable(monkeypatch):
    """backend= made the choice: unsetting PICK_PICK_BACKEND would change nothing."""
    monkeypatch.setenv("PICK_PICK_BACKEND", "THIRD")
    error = rejected(PickEnum, "FIRST", device="tpu", capability=[9, 0], dtype=None)
    assert str(error).splitlines()[-1] == (
        "Choose another; list the candidates with: attn select --set 'capability=[9,0]' "
        "--set device=tpu --set dtype=null --registry test_selection:PickEnum"
    )


class Int64:
    """What numpy's ``int64`` is to attn (numpy is not installed): nothing JSON can write."""

    __module__ = "numpy"

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def item(self) -> int:  # numpy's: the Python value
        return self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Int64) and other.value == self.value


class Kind(enum.Enum):
    FAST = "fast"


def test_a_setting_json_cannot_write_is_passed_and_shown_in_the_hint():
    """A numpy integer or a host's enum member is a setting like any other (json.dumps raised)."""
    settings = {"device": Kind.FAST, "size": Int64(128), "tag": b"x"}
    chosen = select(PickEnum, **settings)
    assert (chosen.name, chosen.settings) == ("THIRD", tuple(sorted(settings.items())))
    assert CudaOnly.asked[-1] == settings
    error = rejected(PickEnum, "FIRST", **settings)
    assert str(error).splitlines()[-1] == (  # numpy's value as Python's, anything else as text
        "Choose another; list the candidates with: attn select --set 'device=\"Kind.FAST\"' "
        "--set size=128 --set 'tag=\"b'\"'\"'x'\"'\"'\"' --registry test_selection:PickEnum"
    )


class TinyInferEnum(
    BackendEnum, group="tiny-infer.backends", host="tiny-infer", interface=PickBackend
):
    """A host whose name has a hyphen: its default noun is 'tiny-infer backend'."""

    ONE = f"{__name__}:NeedsKernel"
    TWO = f"{__name__}:Accepts"


def test_the_variable_of_a_hyphenated_host_is_a_name_a_shell_can_export(monkeypatch):
    """TINY_INFER_TINY_INFER_BACKEND, every character not a letter or digit an underscore."""
    monkeypatch.setenv("TINY_INFER_TINY_INFER_BACKEND", "TWO")
    chosen = select(TinyInferEnum, flag="distinct from other tests")
    assert (chosen.name, chosen.explicit) == ("TWO", True)


class CafeEnum(BackendEnum, group="cafe.backends", host="cafe", noun="café backend"):
    ONE = f"{__name__}:Accepts"


def test_a_noun_beyond_ascii_gives_an_ascii_variable(monkeypatch):
    """The noun 'café backend' reads CAFE_CAF__BACKEND: é is no letter a shell exports."""
    monkeypatch.setenv("CAFE_CAF__BACKEND", "NOPE")
    with pytest.raises(UnknownBackendError, match="CAFE_CAF__BACKEND='NOPE' chose it"):
        select(CafeEnum)


def test_the_environment_variable_of_attns_registries(monkeypatch):
    """ATTN_ATTENTION_BACKEND and ATTN_MLA_PREFILL_BACKEND: the noun in capitals."""
    monkeypatch.setenv("ATTN_MLA_PREFILL_BACKEND", "NOPE")
    with pytest.raises(UnknownBackendError, match="Unknown MLA prefill backend: 'NOPE'"):
        select(attn.MLAPrefillBackendEnum)
    monkeypatch.setenv("ATTN_ATTENTION_BACKEND", "NO_ATTENTION")
    chosen = select(attn.AttentionBackendEnum)
    assert (chosen.name, chosen.explicit, len(chosen.tried)) == ("NO_ATTENTION", True, 1)


def test_an_unknown_explicit_name_is_the_unknown_name_error():
    """The registry's own error, with near matches."""
    with pytest.raises(UnknownBackendError, match=r"Did you mean 'FIRST'\?"):
        select(PickEnum, "FRIST")


def test_a_member_of_another_registry_is_not_the_member_of_the_same_name():
    """Passing MLA prefill's FLASH_ATTN to the attention registry is a mistake, said as such."""
    with pytest.raises(UnknownBackendError) as caught:
        attn.AttentionBackendEnum.select(attn.MLAPrefillBackendEnum.FLASH_ATTN, device="cuda")
    assert caught.value.name == "MLAPrefillBackendEnum.FLASH_ATTN"
    assert "Unknown attention backend: 'MLAPrefillBackendEnum.FLASH_ATTN'" in str(caught.value)
    chosen = attn.AttentionBackendEnum.select(attn.AttentionBackendEnum.NO_ATTENTION)
    assert (chosen.name, chosen.explicit) == ("NO_ATTENTION", True)


def test_a_backend_given_by_another_object_is_chosen_by_its_name(site):
    """A plugin backend of this registry, any object with a name (a host's own enum member),
    and the name itself choose alike; a plugin backend of another registry, or a registry
    class, is an unknown name."""
    accepts = attn.AttentionBackendEnum.NO_ATTENTION.value  # a class that accepts every setting
    site.dist("plug", entry_points={"attn.backends": {"PLUG_ATTN": accepts}})
    plug = attn.AttentionBackendEnum["PLUG_ATTN"]
    named = enum.Enum("HostNames", ["NO_ATTENTION"]).NO_ATTENTION
    for backend in (plug, "PLUG_ATTN", named):
        assert attn.AttentionBackendEnum.select(backend).explicit
    for foreign, shown in [(plug, "AttentionBackendEnum.PLUG_ATTN"), (PickEnum, None)]:
        with pytest.raises(UnknownBackendError) as caught:
            attn.MLAPrefillBackendEnum.select(foreign)
        assert shown is None or caught.value.name == shown


# -- reasons ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "code", "message"),
    [
        ("pickplug:Picky", "invalid-configuration", "head_size 7 is odd"),
        ("pickplug:Raises", "validation-failed", "its check raised RuntimeError: boom"),
        ("pickplug:ReturnsTuple", "invalid-configuration", "head_size 7 is odd"),
        (
            "pickplug:ReturnsInts",
            "validation-failed",
            "validate_configuration must return a list of str; 1 is a <class 'int'>",
        ),
        (  # a repr longer than 60 characters is cut, and says so
            "pickplug:ReturnsGenerator",
            "validation-failed",
            (
                "validate_configuration must return a list of str; <generator object "
                "ReturnsGenerator.validate_configuration... is a <class 'generator'>"
            ),
        ),
        (  # a str subclass (a StrEnum member) is a str: its text is the reason
            "pickplug:ReturnsStrSubclass",
            "invalid-configuration",
            "sneaky head size",
        ),
        ("pickplug:ReturnsListSubclass", "invalid-configuration", "head_size 7 is odd"),
        (  # its type's == and repr() raise: never called, or a reason
            "pickplug:ReturnsHostile",
            "validation-failed",
            "validate_configuration must return a list of str; odd is a (its repr() raises)",
        ),
        (
            "pickplug:MissingAsText",
            "validation-failed",
            (
                "its check raised TypeError: missing_requirements() must return a list of str, "
                "not 'torch'"
            ),
        ),
        (  # every item too, and an empty str is no empty list
            "pickplug:MissingAsNone",
            "validation-failed",
            (
                "its check raised TypeError: missing_requirements() must return a list of str, "
                "not [None]"
            ),
        ),
        (
            "pickplug:MissingAsEmptyText",
            "validation-failed",
            "its check raised TypeError: missing_requirements() must return a list of str, not ''",
        ),
        (
            "pickplug:Missing",
            "load-failure",
            "cannot be loaded: AttributeError: module 'pickplug' has no attribute 'Missing'",
        ),
        (
            "pickplug:NotABackend",
            "load-failure",
            "cannot be loaded: NotABackend does not derive from test_selection.PickBackend",
        ),
        (
            "absent_module:C",
            "load-failure",
            "cannot be loaded: ModuleNotFoundError: No module named 'absent_module'",
        ),
    ],
)
def test_each_kind_of_rejection_is_a_reason(host, value, code, message):
    """Load failures, reasons returned, a raising or hostile check: a reason each, never a crash."""
    module, _, attr = value.partition(":")
    host.dist(
        "pick-plugin",
        "1.5",
        entry_points={"pick.backends": {"NEW": f"{module}:{attr}"}},
        requires=("pick>=1",),
    )
    PickEnum.refresh()
    error = rejected(PickEnum, "NEW", head_size=7)
    (row,) = error.tried
    assert [(r.code, r.message) for r in row.reasons] == [(code, message)]


def test_a_missing_kernel_package_is_named_without_importing_anything(site):
    """requires is checked with find_spec: the missing package named, the installed not imported."""
    site.module("pick_kernel", "raise RuntimeError('a kernel must not be imported')\n")
    register(PickEnum.CUSTOM, f"{__name__}:NeedsTwoKernels")
    (row,) = rejected(PickEnum, "CUSTOM").tried
    assert [(r.code, r.message) for r in row.reasons] == [
        ("missing-requirement", "needs pick-other-kernel, not installed")
    ]
    assert "pick_kernel" not in sys.modules


def test_keyboard_interrupt_passes_through(host):
    """Ctrl-C in a plugin's check stops the selection, as the user asked."""
    plugin(host, NEW="Interrupts")
    with pytest.raises(KeyboardInterrupt):
        select(PickEnum, "NEW")


@pytest.mark.parametrize("checker", ["ReturnsNone", "ReturnsEmptyTuple"])
def test_a_check_that_returns_no_reason_accepts(host, checker):
    """None and () are no reasons, as [] is: the candidate is chosen."""
    plugin(host, NEW=checker)
    assert select(PickEnum, "NEW", head_size=7).tried[-1].verdict == "chosen"


class PlainInterface:
    """A host's interface that is not attn's Backend: any class works as one."""


class PlainNeedsKernel(PlainInterface):
    requires = ("plain-kernel-not-installed",)


class PlainHost(
    BackendEnum, group="plainhost.backends", host="plainhost", interface=PlainInterface
):
    NEEDS = f"{__name__}:PlainNeedsKernel"


def test_requires_is_checked_for_a_class_without_missing_requirements():
    """A missing kernel package rejects a class that declares requires without Backend's method."""
    (row,) = rejected(PlainHost).tried
    assert [(r.code, r.message) for r in row.reasons] == [
        ("missing-requirement", "needs plain-kernel-not-installed, not installed")
    ]


def test_listing_says_the_same_of_that_class():
    """attn list --load reads requires the way selection does: not available, the package named."""
    from attn.registry.listing import build_report  # noqa: PLC0415

    (row,) = build_report(PlainHost, load=True).backends
    assert (row.available, row.requires, row.missing) == (
        False,
        ("plain-kernel-not-installed",),
        ("plain-kernel-not-installed",),
    )


def test_a_class_without_validate_configuration_accepts_every_setting():
    """No method, no reasons: any settings at all."""
    assert select(PickEnum, "THIRD", anything=[1, (("a", 2),)], device="moon").name == "THIRD"


@pytest.mark.parametrize("value", [{"paged": True}, [1, {2}]])
def test_a_mapping_or_a_set_setting_is_refused_naming_it(value):
    """Checks receive settings as given (lists as tuples): a dict is no setting, not a tuple."""
    with pytest.raises(TypeError, match=r"^setting 'opts' holds a (dict|set): settings must be"):
        select(PickEnum, "THIRD", opts=value)


def test_a_blank_or_multi_line_reason_is_one_line_that_says_something(host):
    """A reason is shown as one line: no empty reason, no line that looks like another row."""
    plugin(host, NEW="ReturnsBlankAndLines")
    (row,) = rejected(PickEnum, "NEW").tried
    assert [r.message for r in row.reasons] == [
        "(its check gave an empty reason)",
        "too big FAKE (builtin): chosen",
    ]


def test_an_object_whose_key_attribute_is_no_method_is_read_by_its_name():
    """Only attn's backends have a callable _key: anything else with a name is read by it."""
    backend = type("Named", (), {"name": "THIRD", "_key": ("x",)})()
    assert select(PickEnum, backend).name == "THIRD"


def test_none_valid_is_an_error_listing_every_candidate():
    """SelectionError lists every candidate tried, in order, with its reasons."""
    error = rejected(PickEnum, device="tpu")
    assert not error.explicit
    assert str(error) == (
        "No pick backend of PickEnum for device='tpu' is valid; tried in order:\n"
        "  SECOND (builtin): rejected: needs pick-kernel-not-installed, not installed\n"
        "  FIRST (builtin): rejected: CUDA only\n"
        "Install a kernel package named above, or change the settings."
    )


def test_none_valid_without_a_missing_package_does_not_say_to_install_one():
    """The rows' reasons are a check's and a load failure's: installing a kernel is no fix."""
    error = rejected(ChecksEnum, device="tpu")
    lines = str(error).splitlines()
    assert [row.reasons[0].code for row in error.tried] == ["invalid-configuration", "load-failure"]
    assert lines[-1] == "Change the settings, or fix a candidate as its reasons above say."


def test_selection_error_pickles_with_its_rows():
    """Its arguments round-trip through pickle: a worker's error reaches the driver whole."""
    error = rejected(PickEnum, "SECOND")
    back = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes
    assert (str(back), back.tried, back.explicit, back.registry) == (
        str(error),
        error.tried,
        True,
        "PickEnum",
    )
    assert SelectionError.__module__ == "attn"


def test_a_selection_explains_itself():
    """str() says what was chosen for which settings, then one line per candidate."""
    assert str(select(PickEnum, device="rocm", head_size=64)) == (
        "THIRD chosen for device='rocm', head_size=64:\n"
        "  FIRST (builtin): rejected: CUDA only\n"
        "  SECOND (builtin): rejected: needs pick-kernel-not-installed, not installed\n"
        "  THIRD (builtin): chosen"
    )


# -- settings and the cache -----------------------------------------------------------------


class FakeTorchDtype:
    """What str() of torch.float16 gives, without torch."""

    def __str__(self) -> str:
        return "torch.float16"


def test_dtype_is_a_name_whether_given_as_text_or_a_torch_dtype():
    """Checks receive dtype='float16' for 'float16', 'torch.float16' or torch.float16."""
    assert dtype_name(FakeTorchDtype()) == dtype_name("float16") == "float16"
    first = select(PickEnum, "FIRST", dtype=FakeTorchDtype(), capability=[9, 0])
    assert CudaOnly.asked == [{"dtype": "float16", "capability": (9, 0)}]
    assert select(PickEnum, "FIRST", dtype="float16", capability=(9, 0)) is first
    assert first.settings == (("capability", (9, 0)), ("dtype", "float16"))
    select(PickEnum, "FIRST", dtype=None)  # not given: None stays None
    assert CudaOnly.asked[-1] == {"dtype": None}


def test_equal_settings_are_answered_from_the_cache():
    """The same settings, in any order, give the same Selection; checks are not asked again."""
    first = select(PickEnum, device="cuda", head_size=64)
    assert select(PickEnum, head_size=64, device="cuda") is first
    assert len(CudaOnly.asked) == 1
    assert select(PickEnum, device="cuda", head_size=128) is not first


class WantsTrue(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings: object) -> list[str]:
        return [] if settings.get("flag") is True else [f"flag={settings.get('flag')!r}"]


class FlagEnum(BackendEnum, group="flag.backends", host="flag", interface=PickBackend):
    ONE = f"{__name__}:WantsTrue"


def test_settings_equal_in_python_but_of_other_types_are_checked_again():
    """True, 1 and 1.0 are equal keys in a dict, but a check may accept one only."""
    assert select(FlagEnum, flag=True).settings == (("flag", True),)
    for other in (1, 1.0, (True,)):
        assert rejected(FlagEnum, flag=other).tried[0].reasons[0].message == f"flag={other!r}"
    assert rejected(FlagEnum, flag=(1,)).tried[0].reasons[0].message == "flag=(1,)"


class Device(str):
    """A str subclass: its repr() is the plain str's."""

    __slots__ = ()


class WantsPlainText(PickBackend):
    @classmethod
    def validate_configuration(cls, **settings: object) -> list[str]:
        device = settings.get("device")
        return [] if type(device) is str else [f"device is a {type(device).__name__}"]


class TextEnum(BackendEnum, group="text.backends", host="text", interface=PickBackend):
    ONE = f"{__name__}:WantsPlainText"


def test_a_str_subclass_equal_to_a_str_of_the_same_repr_is_checked_again():
    """Device('cpu') == 'cpu' and their reprs agree, but the types differ: each is checked."""
    assert rejected(TextEnum, device=Device("cpu")).tried[0].reasons[0].message == (
        "device is a Device"
    )
    assert select(TextEnum, device="cpu").settings == (("device", "cpu"),)


class EmptyEnum(BackendEnum, group="empty.backends", host="empty", interface=PickBackend):
    ONE = f"{__name__}:Accepts"

    @classmethod
    def priorities(cls, **settings: object) -> list[str]:
        return ["ONE"] if settings.get("device") == "cuda" else []


def test_no_candidate_for_the_settings_asks_to_check_them():
    """A host order with nothing for these settings (a misspelt device): check them first."""
    assert str(rejected(EmptyEnum, device="gpu")).splitlines() == [
        "No empty backend of EmptyEnum for device='gpu' is a candidate.",
        "Check the settings or add a plugin.",
    ]


def test_refresh_and_registration_invalidate_the_cache(host):
    """refresh() or a registration changes the table, so selection runs again."""
    first = select(PickEnum, device="cuda")
    PickEnum.refresh()
    second = select(PickEnum, device="cuda")
    assert second is not first
    assert second == first
    register(PickEnum.FIRST, "pickplug:Good")
    third = select(PickEnum, device="cuda")
    assert third.backend_class.__name__ == "Good"
    PickEnum.FIRST.clear_override()
    assert select(PickEnum, device="cuda").backend_class is CudaOnly


def test_a_rejection_is_cached_too(host):
    """A failing selection raises again from the cache, a fresh error each time."""
    first = rejected(PickEnum, "SECOND")
    second = rejected(PickEnum, "SECOND")
    assert second is not first
    assert (str(second), second.tried) == (str(first), first.tried)


def test_unhashable_settings_are_refused():
    """A setting must be usable as a cache key: TypeError otherwise."""
    with pytest.raises(TypeError):
        select(PickEnum, device={1, 2})


def in_sixteen_threads(run: Callable[[int], object]) -> list[BaseException]:
    """Call ``run(0)`` to ``run(15)`` in 16 threads started at once; what they raised."""
    barrier = threading.Barrier(16, timeout=30)
    errors: list[BaseException] = []

    def start(index: int) -> None:
        barrier.wait()
        try:
            run(index)
        except BaseException as exc:  # noqa: BLE001 - the caller checks
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return errors


SELECTS_AS_IT_IS_IMPORTED = """\
from test_selection import PickBackend, PickEnum
from attn.registry.selection import select

EARLY = select(PickEnum, device="tpu")  # this module is half imported: not a candidate yet

class Sel(PickBackend):
    pass
"""


def test_a_selection_made_while_a_candidate_imports_does_not_stick(host):
    """A plugin module that selects as it is imported: the outer call's answer is the cached one."""
    host.module("selfsel", SELECTS_AS_IT_IS_IMPORTED)
    host.dist("sel-plugin", "1.0", entry_points={"pick.backends": {"AAA": "selfsel:Sel"}})
    plugin(host, ZZZ="Good")
    chosen = select(PickEnum, device="tpu")
    assert sys.modules["selfsel"].EARLY.name == "ZZZ"  # AAA could not load inside its own import
    assert chosen.name == "AAA"
    assert select(PickEnum, device="tpu") is chosen


def test_sixteen_threads_selecting_at_once_agree(host):
    """Threads selecting on a fresh registry at once all get the same answer."""
    plugin(host, ALPHA="Good")
    state_of(PickEnum).reset()
    results: list[Selection] = []

    def run(index: int) -> None:
        results.append(select(PickEnum, device="rocm", head_size=64 + index % 2))

    assert in_sixteen_threads(run) == []
    assert len(results) == 16
    assert {r.name for r in results} == {"THIRD"}
    assert len({r.settings for r in results}) == 2


def test_the_cache_keeps_every_result_for_the_table():
    """Past any number of settings, a result is chosen once, and every choice is recorded."""
    first = select(PickEnum, device="cuda", head_size=0)
    for size in range(1, 300):
        select(PickEnum, device="cuda", head_size=size)
    asked = len(CudaOnly.asked)
    assert select(PickEnum, device="cuda", head_size=0) is first
    assert select(PickEnum, device="cuda", head_size=1).name == "FIRST"
    assert len(CudaOnly.asked) == asked
    (made,) = (r.selections for r in attn.capture_state().registries if r.registry == "PickEnum")
    assert [dict(r.settings)["head_size"] for r in made] == list(range(300))


def test_sixteen_threads_agree_on_many_settings(host):
    """Threads that select hundreds of distinct settings at once all succeed, all recorded."""
    from attn.registry import selection  # noqa: PLC0415

    chosen: set[tuple[str, object]] = set()

    def run(index: int) -> None:
        for size in range(index, 256, 16):
            found = select(PickEnum, device="cuda", head_size=size)
            chosen.add((found.name, dict(found.settings)["head_size"]))

    assert in_sixteen_threads(run) == []
    assert chosen == {("FIRST", size) for size in range(256)}
    assert len(selection.recorded(PickEnum)) == 256


def _select_in_child() -> None:
    if select(PickEnum, device="cuda", head_size=-1).name != "FIRST":
        raise SystemExit(2)


def test_a_forked_child_selects_while_the_parent_selects_in_threads(host):
    """The cache's lock is free in a child forked while other threads select."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    forking = multiprocessing.get_context("fork")
    stop = threading.Event()

    def churn() -> None:
        size = 0
        while not stop.is_set():
            select(PickEnum, device="cuda", head_size=size % 300)
            size += 1

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(20):
            child = forking.Process(target=_select_in_child)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # forking with threads
                child.start()
            child.join(10)
            if child.is_alive():  # waiting for a lock no thread will release
                child.kill()
                child.join()
            assert child.exitcode == 0
    finally:
        stop.set()
        thread.join(timeout=30)


def test_a_tuple_holding_a_list_is_a_setting_like_a_list():
    """Settings are frozen all the way down: (9, [0]) is answered from the cache like [9, [0]]."""
    first = select(PickEnum, device="cuda", shape=(9, [0]))
    assert select(PickEnum, device="cuda", shape=[9, (0,)]) is first
    assert CudaOnly.asked == [{"device": "cuda", "shape": (9, (0,))}]


class RegistersWhileChecked(PickBackend):
    """Its first check registers CUSTOM: the table changes while that selection is made."""

    registered = False

    @classmethod
    def validate_configuration(cls, **_settings: object) -> list[str]:
        if not cls.registered:
            cls.registered = True
            register(PickEnum.CUSTOM, f"{__name__}:Accepts")
        return ["never valid"]


def test_a_selection_made_while_the_table_changed_is_not_kept(host):
    """The answer computed across a registration is returned, then chosen again next time."""
    register(PickEnum.FIRST, f"{__name__}:RegistersWhileChecked")
    first = select(PickEnum, device="cuda")
    assert (first.name, first.backend_class) == ("FIRST", CudaOnly)  # the built-in default
    second = select(PickEnum, device="cuda")
    assert second is not first
    assert second == first
    assert select(PickEnum, device="cuda") is second  # the table is still: kept now


REGISTERS_AS_IT_IS_IMPORTED = f"""\
from attn.registry import register
from {__name__} import PickBackend, PickEnum

class First(PickBackend):
    pass

class Second(PickBackend):
    pass

register(PickEnum.CUSTOM, "selfreg:Second")
"""


def test_a_registration_made_while_the_choice_imports_is_what_is_chosen(host):
    """Importing CUSTOM's class registers another for it: both answers name that one."""
    host.module("selfreg", REGISTERS_AS_IT_IS_IMPORTED)
    register(PickEnum.CUSTOM, "selfreg:First")
    chosen = select(PickEnum, "CUSTOM")
    assert chosen.backend_class is PickEnum.CUSTOM.get_class() is sys.modules["selfreg"].Second
