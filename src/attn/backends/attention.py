"""The built-in attention backends: one class per member of AttentionBackendEnum.

Each class names the package its kernel needs; none imports it at module
level, so every one of them imports on a machine without any kernel library.
"""

from __future__ import annotations

from ._base import AttentionBackend

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: typing stays off the warm path

if TYPE_CHECKING:
    from typing import ClassVar

__all__ = [
    "CPUAttentionBackend",
    "CutlassMLABackend",
    "FlashAttentionBackend",
    "FlashAttentionMLABackend",
    "FlashInferBackend",
    "FlashInferMLABackend",
    "FlashMLABackend",
    "FlashMLASparseBackend",
    "FlashSinkAttentionBackend",
    "FlexAttentionBackend",
    "IpexAttentionBackend",
    "NoAttentionBackend",
    "PallasAttentionBackend",
    "RocmAiterFlashAttentionBackend",
    "RocmAiterMLABackend",
    "RocmAiterUnifiedAttentionBackend",
    "RocmAttentionBackend",
    "TorchSDPABackend",
    "TreeAttentionBackend",
    "TritonAttentionBackend",
    "TritonMLABackend",
    "XFormersBackend",
]


class FlashAttentionBackend(AttentionBackend):
    """FLASH_ATTN: FlashAttention kernels."""

    requires: ClassVar[tuple[str, ...]] = ("flash-attn",)


class FlashSinkAttentionBackend(AttentionBackend):
    """FLASH_SINK_ATTN: FlashAttention with attention sinks."""

    requires: ClassVar[tuple[str, ...]] = ("flash-attn",)


class TritonAttentionBackend(AttentionBackend):
    """TRITON_ATTN: Attention kernels written in Triton."""

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class XFormersBackend(AttentionBackend):
    """XFORMERS: xFormers memory-efficient attention."""

    requires: ClassVar[tuple[str, ...]] = ("xformers",)


class RocmAttentionBackend(AttentionBackend):
    """ROCM_ATTN: Paged attention for AMD GPUs (ROCm), in Triton."""

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class RocmAiterMLABackend(AttentionBackend):
    """ROCM_AITER_MLA: AITER multi-head latent attention for AMD GPUs."""

    requires: ClassVar[tuple[str, ...]] = ("amd-aiter",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("aiter",)


class RocmAiterFlashAttentionBackend(AttentionBackend):
    """ROCM_AITER_FA: AITER flash attention for AMD GPUs."""

    requires: ClassVar[tuple[str, ...]] = ("amd-aiter",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("aiter",)


class TorchSDPABackend(AttentionBackend):
    """TORCH_SDPA: PyTorch's scaled_dot_product_attention."""

    requires: ClassVar[tuple[str, ...]] = ("torch",)

    @classmethod
    def get_impl_cls(cls) -> type:
        """:class:`attn.backends.torch_sdpa.TorchSDPAImpl`, which imports torch when called."""
        from .torch_sdpa import TorchSDPAImpl  # noqa: PLC0415 - keeps torch off import

        return TorchSDPAImpl


class FlashInferBackend(AttentionBackend):
    """FLASHINFER: FlashInfer attention kernels."""

    requires: ClassVar[tuple[str, ...]] = ("flashinfer-python",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("flashinfer",)


class FlashInferMLABackend(AttentionBackend):
    """FLASHINFER_MLA: FlashInfer multi-head latent attention."""

    requires: ClassVar[tuple[str, ...]] = ("flashinfer-python",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("flashinfer",)


class TritonMLABackend(AttentionBackend):
    """TRITON_MLA: Multi-head latent attention in Triton."""

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class CutlassMLABackend(AttentionBackend):
    """CUTLASS_MLA: CUTLASS multi-head latent attention."""

    requires: ClassVar[tuple[str, ...]] = ("nvidia-cutlass",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("cutlass",)


class FlashMLABackend(AttentionBackend):
    """FLASHMLA: FlashMLA decoding kernels."""

    requires: ClassVar[tuple[str, ...]] = ("flash-mla",)


class FlashMLASparseBackend(AttentionBackend):
    """FLASHMLA_SPARSE: FlashMLA with sparse attention."""

    requires: ClassVar[tuple[str, ...]] = ("flash-mla",)


class FlashAttentionMLABackend(AttentionBackend):
    """FLASH_ATTN_MLA: Multi-head latent attention on FlashAttention."""

    requires: ClassVar[tuple[str, ...]] = ("flash-attn",)


class PallasAttentionBackend(AttentionBackend):
    """PALLAS: Pallas attention kernels for TPUs (PyTorch/XLA)."""

    requires: ClassVar[tuple[str, ...]] = ("torch-xla",)


class IpexAttentionBackend(AttentionBackend):
    """IPEX: Intel Extension for PyTorch attention."""

    requires: ClassVar[tuple[str, ...]] = ("intel-extension-for-pytorch",)


class NoAttentionBackend(AttentionBackend):
    """NO_ATTENTION: For models without attention layers; needs no kernel."""

    requires: ClassVar[tuple[str, ...]] = ()


class FlexAttentionBackend(AttentionBackend):
    """FLEX_ATTENTION: PyTorch's FlexAttention."""

    requires: ClassVar[tuple[str, ...]] = ("torch",)


class TreeAttentionBackend(AttentionBackend):
    """TREE_ATTN: Tree attention for speculative decoding, in Triton."""

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class RocmAiterUnifiedAttentionBackend(AttentionBackend):
    """ROCM_AITER_UNIFIED_ATTN: AITER unified attention for AMD GPUs."""

    requires: ClassVar[tuple[str, ...]] = ("amd-aiter",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("aiter",)


class CPUAttentionBackend(AttentionBackend):
    """CPU_ATTN: Attention on the CPU, through PyTorch."""

    requires: ClassVar[tuple[str, ...]] = ("torch",)
