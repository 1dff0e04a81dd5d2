"""The attention host: interfaces, the two registries, the built-in backends."""

from __future__ import annotations

from ._base import AttentionBackend, MLAPrefillBackend
from .registry import (
    AttentionBackendEnum,
    MLAPrefillBackendEnum,
    register_backend,
    register_mla_prefill_backend,
)

__all__ = [
    "AttentionBackend",
    "AttentionBackendEnum",
    "MLAPrefillBackend",
    "MLAPrefillBackendEnum",
    "register_backend",
    "register_mla_prefill_backend",
]


def _deprecated_alias(owner: str) -> type[AttentionBackendEnum]:
    # _Backend, the seeds' name for the attention registry, with its warning.
    import warnings  # noqa: PLC0415 - off the warm path

    msg = f"{owner}._Backend is deprecated; use attn.AttentionBackendEnum"
    warnings.warn(msg, DeprecationWarning, stacklevel=3)  # the code that touched owner._Backend
    return AttentionBackendEnum


def __getattr__(name: str) -> object:
    if name == "_Backend":
        return _deprecated_alias(__name__)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
