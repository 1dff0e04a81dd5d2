"""The built-in MLA prefill backends: one class per member of MLAPrefillBackendEnum.

As for attention, each names its kernel package and imports it lazily.
"""

from __future__ import annotations

from ._base import MLAPrefillBackend

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: typing stays off the warm path

if TYPE_CHECKING:
    from typing import ClassVar

__all__ = [
    "CPUMLAPrefillBackend",
    "FlashAttentionMLAPrefillBackend",
    "FlashInferMLAPrefillBackend",
    "RocmAiterFAMLAPrefillBackend",
    "TokenspeedMLAPrefillBackend",
    "TritonRaggedMLAPrefillBackend",
    "ZenCPUMLAPrefillBackend",
]


class FlashAttentionMLAPrefillBackend(MLAPrefillBackend):
    """FLASH_ATTN: MLA prefill on FlashAttention."""

    requires: ClassVar[tuple[str, ...]] = ("flash-attn",)


class FlashInferMLAPrefillBackend(MLAPrefillBackend):
    """FLASHINFER: MLA prefill on FlashInfer."""

    requires: ClassVar[tuple[str, ...]] = ("flashinfer-python",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("flashinfer",)


class TritonRaggedMLAPrefillBackend(MLAPrefillBackend):
    """TRITON_RAGGED: MLA prefill over ragged batches, in Triton."""

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class TokenspeedMLAPrefillBackend(MLAPrefillBackend):
    """TOKENSPEED_MLA: TokenSpeed MLA prefill kernels."""

    requires: ClassVar[tuple[str, ...]] = ("tokenspeed-mla",)


class RocmAiterFAMLAPrefillBackend(MLAPrefillBackend):
    """ROCM_AITER_FA: MLA prefill on AITER flash attention (AMD GPUs)."""

    requires: ClassVar[tuple[str, ...]] = ("amd-aiter",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("aiter",)


class CPUMLAPrefillBackend(MLAPrefillBackend):
    """CPU: MLA prefill on the CPU, through PyTorch."""

    requires: ClassVar[tuple[str, ...]] = ("torch",)


class ZenCPUMLAPrefillBackend(MLAPrefillBackend):
    """ZEN_CPU: MLA prefill on AMD Zen CPUs (zentorch)."""

    requires: ClassVar[tuple[str, ...]] = ("zentorch",)
