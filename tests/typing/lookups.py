"""What a type checker sees of lookups, checked by ``mypy --strict`` (``.ci/run``); never run.

``Registry["NAME"]`` is typed by type checkers as a member (they treat Enum
indexing specially); ``Registry.lookup("NAME")`` is typed as what it returns at
run time: a member, or the backend that a plugin added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attn
from attn import (
    AttentionBackend,
    AttentionBackendEnum,
    MLAPrefillBackend,
    MLAPrefillBackendEnum,
    PluginBackend,
)
from attn.registry import BackendEnum, register

if TYPE_CHECKING:
    from typing_extensions import assert_type  # noqa: TC004 - mypy reads this file, nothing runs it


class ToyBackendEnum(BackendEnum, group="toy.backends", host="toy"):
    """Another host's registry."""

    FAST = "toy.fast:FastBackend"


def lookups_may_answer_with_a_plugin_backend() -> None:
    """Each registry's lookup is its member type or a PluginBackend."""
    assert_type(
        AttentionBackendEnum.lookup("VENDOR_FAST"),
        AttentionBackendEnum | PluginBackend[AttentionBackend],
    )
    assert_type(
        MLAPrefillBackendEnum.lookup("VENDOR"),
        MLAPrefillBackendEnum | PluginBackend[MLAPrefillBackend],
    )
    assert_type(ToyBackendEnum.lookup("FAST"), ToyBackendEnum | PluginBackend[Any])


def a_lookup_is_not_a_member() -> None:
    """Code that assumes a member must narrow first (the ignore is needed, or mypy fails)."""
    member: AttentionBackendEnum = AttentionBackendEnum.lookup("X")  # type: ignore[assignment]
    del member
    backend = AttentionBackendEnum.lookup("X")
    if isinstance(backend, AttentionBackendEnum):
        assert_type(backend, AttentionBackendEnum)
    else:
        assert_type(backend, PluginBackend[AttentionBackend])


def both_kinds_have_the_backend_methods() -> None:
    """get_path, get_class, is_overridden, clear_override and name work on either kind."""
    backend = AttentionBackendEnum.lookup("VENDOR_FAST")
    assert_type(backend.get_path(), str)
    assert_type(backend.get_path(include_classname=False), str)
    assert_type(backend.get_class(), type[AttentionBackend])
    assert_type(backend.is_overridden(), bool)
    assert_type(backend.clear_override(), None)
    assert_type(backend.name, str)
    attn.register_backend(backend, "vendor_fast.backend:VendorFastBackend")


def get_class_is_typed_by_the_registry_interface() -> None:
    """A member's class is its registry's interface; another host's is a plain class."""
    attention: type[AttentionBackend] = AttentionBackendEnum.FLASH_ATTN.get_class()
    prefill: type[MLAPrefillBackend] = MLAPrefillBackendEnum.FLASH_ATTN.get_class()
    by_name: type[AttentionBackend] = AttentionBackendEnum["FLASH_ATTN"].get_class()
    del attention, prefill, by_name
    assert_type(MLAPrefillBackendEnum.CPU.get_class(), type[MLAPrefillBackend])
    assert_type(ToyBackendEnum.FAST.get_class(), type)
    wrong: type[MLAPrefillBackend] = AttentionBackendEnum.FLASH_ATTN.get_class()  # type: ignore[assignment]
    del wrong


def the_generic_register_takes_a_backend_and_a_path() -> None:
    """register(backend, class_path=None): no registry, no caller depth."""
    register(ToyBackendEnum.FAST, "toy.fast:Other")
    register(AttentionBackendEnum.lookup("VENDOR"))(type("Cls", (AttentionBackend,), {}))
    register(ToyBackendEnum, ToyBackendEnum.FAST, "toy.fast:Other")  # type: ignore[call-arg, arg-type]


def a_selection_calls_its_class_as_selection_md_shows() -> None:
    """``selection.backend_class.get_impl_cls()`` type-checks with no ignore."""
    selection = AttentionBackendEnum.select(head_size=128, dtype="float16")
    impl = selection.backend_class.get_impl_cls()
    assert_type(selection.backend_class, type[Any])
    del impl
