"""The attention host: interfaces, the two registries, the built-in backends."""

from __future__ import annotations

import warnings

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


def __getattr__(name: str) -> object:
    if name == "_Backend":
        warnings.warn(
            "attn.backends._Backend is deprecated; use attn.AttentionBackendEnum",
            DeprecationWarning,
            stacklevel=2,
        )
        return AttentionBackendEnum
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
