"""The built-in attention backends: one class per member of AttentionBackendEnum.

Each class names the package its kernel needs; none imports it at module
level, so every one of them imports on a machine without any kernel library.
Each checks a configuration against its kernel's row of
`attn.backends._facts.ATTENTION` (``validate_configuration``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn import _fork

from ._base import AttentionBackend

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


class _Builtin(AttentionBackend):
    """What every built-in attention class shares: the check against its kernel's facts."""

    facts_key: ClassVar[str]
    """The class's row in `attn.backends._facts.ATTENTION`: its member's name."""

    @classmethod
    def validate_configuration(cls, **settings: object) -> list[str]:
        """Why the kernel cannot run with *settings*; empty when it can.

        Settings it does not know are ignored, and a setting not given is not
        checked; docs/selection.md lists the facts and the settings.
        """
        with _fork.importing():
            from ._facts import ATTENTION  # noqa: PLC0415 - listing imports the classes, not the facts

        return ATTENTION[cls.facts_key].check(settings)


class FlashAttentionBackend(_Builtin):
    """FLASH_ATTN: FlashAttention kernels."""

    facts_key: ClassVar[str] = "FLASH_ATTN"

    requires: ClassVar[tuple[str, ...]] = ("flash-attn",)


class FlashSinkAttentionBackend(_Builtin):
    """FLASH_SINK_ATTN: FlashAttention with attention sinks."""

    facts_key: ClassVar[str] = "FLASH_SINK_ATTN"

    requires: ClassVar[tuple[str, ...]] = ("flash-attn",)


class TritonAttentionBackend(_Builtin):
    """TRITON_ATTN: Attention kernels written in Triton."""

    facts_key: ClassVar[str] = "TRITON_ATTN"

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class XFormersBackend(_Builtin):
    """XFORMERS: xFormers memory-efficient attention."""

    facts_key: ClassVar[str] = "XFORMERS"

    requires: ClassVar[tuple[str, ...]] = ("xformers",)


class RocmAttentionBackend(_Builtin):
    """ROCM_ATTN: Paged attention for AMD GPUs (ROCm), in Triton."""

    facts_key: ClassVar[str] = "ROCM_ATTN"

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class RocmAiterMLABackend(_Builtin):
    """ROCM_AITER_MLA: AITER multi-head latent attention for AMD GPUs."""

    facts_key: ClassVar[str] = "ROCM_AITER_MLA"

    requires: ClassVar[tuple[str, ...]] = ("amd-aiter",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("aiter",)


class RocmAiterFlashAttentionBackend(_Builtin):
    """ROCM_AITER_FA: AITER flash attention for AMD GPUs."""

    facts_key: ClassVar[str] = "ROCM_AITER_FA"

    requires: ClassVar[tuple[str, ...]] = ("amd-aiter",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("aiter",)


class TorchSDPABackend(_Builtin):
    """TORCH_SDPA: PyTorch's scaled_dot_product_attention."""

    facts_key: ClassVar[str] = "TORCH_SDPA"

    requires: ClassVar[tuple[str, ...]] = ("torch",)

    @classmethod
    def get_impl_cls(cls) -> type:
        """`attn.backends.torch_sdpa.TorchSDPAImpl`, which imports torch when called."""
        with _fork.importing():
            from .torch_sdpa import TorchSDPAImpl  # noqa: PLC0415 - keeps torch off import

        return TorchSDPAImpl


class FlashInferBackend(_Builtin):
    """FLASHINFER: FlashInfer attention kernels."""

    facts_key: ClassVar[str] = "FLASHINFER"

    requires: ClassVar[tuple[str, ...]] = ("flashinfer-python",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("flashinfer",)


class FlashInferMLABackend(_Builtin):
    """FLASHINFER_MLA: FlashInfer multi-head latent attention."""

    facts_key: ClassVar[str] = "FLASHINFER_MLA"

    requires: ClassVar[tuple[str, ...]] = ("flashinfer-python",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("flashinfer",)


class TritonMLABackend(_Builtin):
    """TRITON_MLA: Multi-head latent attention in Triton."""

    facts_key: ClassVar[str] = "TRITON_MLA"

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class CutlassMLABackend(_Builtin):
    """CUTLASS_MLA: CUTLASS multi-head latent attention."""

    facts_key: ClassVar[str] = "CUTLASS_MLA"

    requires: ClassVar[tuple[str, ...]] = ("nvidia-cutlass",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("cutlass",)


class FlashMLABackend(_Builtin):
    """FLASHMLA: FlashMLA decoding kernels."""

    facts_key: ClassVar[str] = "FLASHMLA"

    requires: ClassVar[tuple[str, ...]] = ("flash-mla",)


class FlashMLASparseBackend(_Builtin):
    """FLASHMLA_SPARSE: FlashMLA with sparse attention."""

    facts_key: ClassVar[str] = "FLASHMLA_SPARSE"

    requires: ClassVar[tuple[str, ...]] = ("flash-mla",)


class FlashAttentionMLABackend(_Builtin):
    """FLASH_ATTN_MLA: Multi-head latent attention on FlashAttention."""

    facts_key: ClassVar[str] = "FLASH_ATTN_MLA"

    requires: ClassVar[tuple[str, ...]] = ("flash-attn",)


class PallasAttentionBackend(_Builtin):
    """PALLAS: Pallas attention kernels for TPUs (PyTorch/XLA)."""

    facts_key: ClassVar[str] = "PALLAS"

    requires: ClassVar[tuple[str, ...]] = ("torch-xla",)


class IpexAttentionBackend(_Builtin):
    """IPEX: Intel Extension for PyTorch attention."""

    facts_key: ClassVar[str] = "IPEX"

    requires: ClassVar[tuple[str, ...]] = ("intel-extension-for-pytorch",)


class NoAttentionBackend(_Builtin):
    """NO_ATTENTION: For models without attention layers; needs no kernel."""

    facts_key: ClassVar[str] = "NO_ATTENTION"

    requires: ClassVar[tuple[str, ...]] = ()


class FlexAttentionBackend(_Builtin):
    """FLEX_ATTENTION: PyTorch's FlexAttention."""

    facts_key: ClassVar[str] = "FLEX_ATTENTION"

    requires: ClassVar[tuple[str, ...]] = ("torch",)


class TreeAttentionBackend(_Builtin):
    """TREE_ATTN: Tree attention for speculative decoding, in Triton."""

    facts_key: ClassVar[str] = "TREE_ATTN"

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class RocmAiterUnifiedAttentionBackend(_Builtin):
    """ROCM_AITER_UNIFIED_ATTN: AITER unified attention for AMD GPUs."""

    facts_key: ClassVar[str] = "ROCM_AITER_UNIFIED_ATTN"

    requires: ClassVar[tuple[str, ...]] = ("amd-aiter",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("aiter",)


class CPUAttentionBackend(_Builtin):
    """CPU_ATTN: Attention on the CPU, through PyTorch."""

    facts_key: ClassVar[str] = "CPU_ATTN"

    requires: ClassVar[tuple[str, ...]] = ("torch",)
