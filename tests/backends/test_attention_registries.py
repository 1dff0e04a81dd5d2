"""attn's two registries: names, values, registration, CUSTOM, the deprecated alias."""

from __future__ import annotations

import _thread
import logging
import time
import warnings

import pytest

import attn
from attn import (
    AttentionBackend,
    AttentionBackendEnum,
    MLAPrefillBackend,
    MLAPrefillBackendEnum,
    register_backend,
    register_mla_prefill_backend,
)
from attn.registry import BackendInterfaceError, BackendNotRegisteredError, InvalidPathError
from attn.registry.enum import state_of

ATTENTION_NAMES = [
    "FLASH_ATTN",
    "FLASH_SINK_ATTN",
    "TRITON_ATTN",
    "XFORMERS",
    "ROCM_ATTN",
    "ROCM_AITER_MLA",
    "ROCM_AITER_FA",
    "TORCH_SDPA",
    "FLASHINFER",
    "FLASHINFER_MLA",
    "TRITON_MLA",
    "CUTLASS_MLA",
    "FLASHMLA",
    "FLASHMLA_SPARSE",
    "FLASH_ATTN_MLA",
    "PALLAS",
    "IPEX",
    "NO_ATTENTION",
    "FLEX_ATTENTION",
    "TREE_ATTN",
    "ROCM_AITER_UNIFIED_ATTN",
    "CPU_ATTN",
    "CUSTOM",
]
MLA_NAMES = [
    "FLASH_ATTN",
    "FLASHINFER",
    "TRITON_RAGGED",
    "TOKENSPEED_MLA",
    "ROCM_AITER_FA",
    "CPU",
    "ZEN_CPU",
    "CUSTOM",
]
REGISTRIES = [
    (AttentionBackendEnum, register_backend, AttentionBackend, "attention backend"),
    (MLAPrefillBackendEnum, register_mla_prefill_backend, MLAPrefillBackend, "MLA prefill backend"),
]


class OuterBackend(AttentionBackend):
    class Nested(AttentionBackend):
        pass


class OuterMLA(MLAPrefillBackend):
    class Nested(MLAPrefillBackend):
        pass


def test_attention_members_are_the_seeds_names():
    """Every built-in attention backend of the seeds is a member, spelled the same, in order."""
    assert [m.name for m in AttentionBackendEnum] == ATTENTION_NAMES


def test_mla_members_are_the_seeds_names():
    """Every built-in MLA prefill backend of the seeds is a member, in order."""
    assert [m.name for m in MLAPrefillBackendEnum] == MLA_NAMES


@pytest.mark.parametrize("registry", [AttentionBackendEnum, MLAPrefillBackendEnum])
def test_values_are_unique(registry):
    """No member is an alias of another (the seeds' CUSTOM aliased TORCH_SDPA)."""
    values = [m.value for m in registry]
    assert len(set(values)) == len(values)
    assert len(registry.__members__) == len(registry)
    assert registry.CUSTOM.value is None


def test_custom_is_not_torch_sdpa():
    """CUSTOM and TORCH_SDPA are distinct members with distinct behaviour."""
    assert AttentionBackendEnum.CUSTOM is not AttentionBackendEnum.TORCH_SDPA
    assert AttentionBackendEnum.TORCH_SDPA.get_path() == (
        "attn.backends.attention.TorchSDPABackend"
    )


@pytest.mark.parametrize(("registry", "base"), [(r, b) for r, _, b, _ in REGISTRIES])
def test_every_builtin_loads_a_real_class(registry, base):
    """Each built-in with a default points at an importable attn class of the right base."""
    for member in registry:
        if member is registry.CUSTOM:
            continue
        cls = member.get_class()
        assert issubclass(cls, base)
        assert cls.__module__.startswith("attn.backends.")
        assert member.get_path() == f"{cls.__module__}.{cls.__qualname__}"
        assert member.get_path(include_classname=False) == cls.__module__
        assert not member.is_overridden()


@pytest.mark.parametrize(("registry", "register", "base", "noun"), REGISTRIES)
def test_custom_before_registration(registry, register, base, noun):
    """CUSTOM has no default; get_path and get_class say how to register it."""
    for call in (registry.CUSTOM.get_path, registry.CUSTOM.get_class):
        with pytest.raises(BackendNotRegisteredError) as info:
            call()
        assert isinstance(info.value, ValueError)
        message = str(info.value)
        assert message.startswith(f"{registry.__name__}.CUSTOM has no default {noun}: register")
        assert f"attn.{register.__name__}({registry.__name__}.CUSTOM, 'module:Class')" in message
    assert not registry.CUSTOM.is_overridden()


@pytest.mark.parametrize(("registry", "register", "base", "noun"), REGISTRIES)
def test_custom_after_direct_registration(registry, register, base, noun):
    """A direct registration with a dotted path makes CUSTOM usable."""
    nested = OuterBackend.Nested if base is AttentionBackend else OuterMLA.Nested
    outer = "OuterBackend" if base is AttentionBackend else "OuterMLA"
    identity = register(registry.CUSTOM, f"{__name__}:{outer}.Nested")
    assert identity(int) is int
    assert registry.CUSTOM.is_overridden()
    assert registry.CUSTOM.get_class() is nested
    assert registry.CUSTOM.get_path() == f"{__name__}.{outer}.Nested"
    assert registry.CUSTOM.get_path(include_classname=False) == __name__


@pytest.mark.parametrize(("registry", "register", "base", "noun"), REGISTRIES)
def test_override_and_clear_cycle(registry, register, base, noun):
    """Override a built-in, clear it, override again: each step is visible at once."""
    member = registry.FLASH_ATTN
    default = member.get_path()
    outer = OuterBackend if base is AttentionBackend else OuterMLA
    for _ in range(2):
        register(member, f"{__name__}.{outer.__name__}")
        assert member.is_overridden()
        assert member.get_class() is outer
        member.clear_override()
        assert not member.is_overridden()
        assert member.get_path() == default


def test_decorator_registers_and_returns_the_class():
    """@register_backend(member) records module:qualname and returns the class unchanged."""
    decorated = register_backend(AttentionBackendEnum.CUSTOM)(OuterBackend.Nested)
    assert decorated is OuterBackend.Nested
    assert AttentionBackendEnum.CUSTOM.get_path() == f"{__name__}.OuterBackend.Nested"
    assert AttentionBackendEnum.CUSTOM.get_path(include_classname=False) == __name__
    entry = state_of(AttentionBackendEnum).lookup("CUSTOM")
    assert entry is not None
    assert entry.origin == "runtime"
    assert entry.registered_by == __name__


def test_decorator_refuses_local_classes():
    """A class defined in a function would record an unimportable <locals> path."""
    with pytest.raises(InvalidPathError, match="inside a function"):

        @register_backend(AttentionBackendEnum.CUSTOM)
        class Local(AttentionBackend):
            pass

    assert not AttentionBackendEnum.CUSTOM.is_overridden()


def test_direct_registration_records_the_caller():
    """A direct registration remembers the module that made it."""
    register_backend(AttentionBackendEnum.CUSTOM, f"{__name__}.OuterBackend")
    entry = state_of(AttentionBackendEnum).lookup("CUSTOM")
    assert entry is not None
    assert entry.registered_by == __name__


def test_a_registration_with_no_python_caller_is_made():
    """Called straight from C (a thread started on it, an embedding host): no caller, no error."""
    AttentionBackendEnum.CUSTOM.is_overridden()  # discovered: the thread only registers
    _thread.start_new_thread(register_backend, (AttentionBackendEnum.CUSTOM, f"{__name__}.Outer"))
    deadline = time.monotonic() + 30
    while (entry := state_of(AttentionBackendEnum).lookup("CUSTOM")) is None:
        assert time.monotonic() < deadline, "the thread registered nothing"
        time.sleep(0.01)
    assert entry.path.dotted == f"{__name__}.Outer"


@pytest.mark.parametrize("bad", ["NoModule", "a:b:c", "pkg.:Cls", 3])
def test_malformed_paths_are_refused_at_registration(bad):
    """A malformed path is refused when registered, with the path in the message."""
    with pytest.raises(InvalidPathError) as info:
        register_backend(AttentionBackendEnum.CUSTOM, bad)
    assert repr(bad) in str(info.value)
    assert not AttentionBackendEnum.CUSTOM.is_overridden()


def test_register_functions_keep_to_their_registry():
    """register_backend takes attention members only, and the MLA function MLA members."""
    with pytest.raises(TypeError):
        register_backend(MLAPrefillBackendEnum.CUSTOM, f"{__name__}:OuterMLA")
    with pytest.raises(TypeError):
        register_mla_prefill_backend(AttentionBackendEnum.CUSTOM, f"{__name__}:OuterBackend")


def test_registries_are_independent():
    """A registration in one registry leaves the other untouched."""
    register_backend(AttentionBackendEnum.FLASH_ATTN, f"{__name__}:OuterBackend")
    assert AttentionBackendEnum.FLASH_ATTN.is_overridden()
    assert not MLAPrefillBackendEnum.FLASH_ATTN.is_overridden()


def test_registered_class_of_the_wrong_interface_fails_to_load():
    """An MLA class registered as an attention backend fails the interface check."""
    register_backend(AttentionBackendEnum.CUSTOM, f"{__name__}:OuterMLA")
    with pytest.raises(BackendInterfaceError) as info:
        AttentionBackendEnum.CUSTOM.get_class()
    assert "does not derive from attn.backends.AttentionBackend" in str(info.value)
    assert isinstance(info.value, ImportError)


def test_unknown_name_message():
    """An unknown name lists every valid option, built-ins in enum order."""
    with pytest.raises(ValueError, match="Unknown attention backend") as info:
        AttentionBackendEnum["NOT_A_BACKEND"]
    assert str(info.value) == (
        "Unknown attention backend: 'NOT_A_BACKEND'. Valid options are: "
        + ", ".join(ATTENTION_NAMES)
    )
    assert isinstance(info.value, attn.AttnError)


def test_unknown_mla_name_message():
    """The MLA registry speaks of MLA prefill backends."""
    with pytest.raises(ValueError, match="Unknown MLA prefill backend") as info:
        MLAPrefillBackendEnum["NOT_A_BACKEND"]
    assert str(info.value) == (
        "Unknown MLA prefill backend: 'NOT_A_BACKEND'. Valid options are: " + ", ".join(MLA_NAMES)
    )


def test_close_matches_are_suggested():
    """A near miss gets a suggestion on a line of its own."""
    with pytest.raises(ValueError, match="Unknown attention backend") as info:
        AttentionBackendEnum["flash_attn"]
    first, *rest = str(info.value).splitlines()
    assert first.startswith("Unknown attention backend: 'flash_attn'. Valid options are: ")
    assert rest[-1].startswith("Did you mean 'FLASH_ATTN'")


def test_deprecated_alias_warns_and_is_the_real_enum():
    """attn._Backend warns once per access through warnings and is AttentionBackendEnum."""
    with pytest.warns(DeprecationWarning, match="use attn.AttentionBackendEnum"):
        alias = attn._Backend
    assert alias is AttentionBackendEnum
    assert len(alias) == len(ATTENTION_NAMES)
    assert [m.name for m in alias] == ATTENTION_NAMES
    assert alias.FLASH_ATTN is AttentionBackendEnum.FLASH_ATTN


def test_deprecated_alias_of_the_backends_module():
    """attn.backends._Backend is the same deprecated alias."""
    import attn.backends  # noqa: PLC0415

    with pytest.warns(DeprecationWarning, match="attn.backends._Backend is deprecated"):
        assert attn.backends._Backend is AttentionBackendEnum


@pytest.mark.parametrize("owner", ["attn", "attn.backends"])
def test_importing_the_alias_warns_once_at_the_import(owner):
    """`from attn import _Backend`: one warning, attributed to the importing line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(f"from {owner} import _Backend", {})  # noqa: S102 - a fresh from-import
    assert [(w.category, w.filename) for w in caught] == [(DeprecationWarning, "<string>")]


def test_alias_warns_through_warnings_not_logging(caplog):
    """The alias never logs; the warnings filter shows it once per place, as warnings do."""
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            assert (
                attn._Backend.FLASH_ATTN.get_path()
                == "attn.backends.attention.FlashAttentionBackend"
            )
    assert caplog.records == []
    assert [w.category for w in caught] == [DeprecationWarning]
