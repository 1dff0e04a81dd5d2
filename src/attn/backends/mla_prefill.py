"""The built-in MLA prefill backends: one class per member of MLAPrefillBackendEnum.

As for attention, each names its kernel package and imports it lazily, and
checks a configuration against its kernel's row of
`attn.backends._facts.MLA_PREFILL` (``validate_configuration``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn import _fork

from ._base import MLAPrefillBackend

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


class _Builtin(MLAPrefillBackend):
    """What every built-in MLA prefill class shares: the check against its kernel's facts."""

    facts_key: ClassVar[str]
    """The class's row in `attn.backends._facts.MLA_PREFILL`: its member's name."""

    @classmethod
    def validate_configuration(cls, **settings: object) -> list[str]:
        """Why the kernel cannot run with *settings*; empty when it can (as for attention)."""
        with _fork.importing():
            from ._facts import MLA_PREFILL  # noqa: PLC0415 - listing imports the classes, not the facts

        return MLA_PREFILL[cls.facts_key].check(settings)


class FlashAttentionMLAPrefillBackend(_Builtin):
    """FLASH_ATTN: MLA prefill on FlashAttention."""

    facts_key: ClassVar[str] = "FLASH_ATTN"

    requires: ClassVar[tuple[str, ...]] = ("flash-attn",)


class FlashInferMLAPrefillBackend(_Builtin):
    """FLASHINFER: MLA prefill on FlashInfer."""

    facts_key: ClassVar[str] = "FLASHINFER"

    requires: ClassVar[tuple[str, ...]] = ("flashinfer-python",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("flashinfer",)


class TritonRaggedMLAPrefillBackend(_Builtin):
    """TRITON_RAGGED: MLA prefill over ragged batches, in Triton."""

    facts_key: ClassVar[str] = "TRITON_RAGGED"

    requires: ClassVar[tuple[str, ...]] = ("triton",)


class TokenspeedMLAPrefillBackend(_Builtin):
    """TOKENSPEED_MLA: TokenSpeed MLA prefill kernels."""

    facts_key: ClassVar[str] = "TOKENSPEED_MLA"

    requires: ClassVar[tuple[str, ...]] = ("tokenspeed-mla",)


class RocmAiterFAMLAPrefillBackend(_Builtin):
    """ROCM_AITER_FA: MLA prefill on AITER flash attention (AMD GPUs)."""

    facts_key: ClassVar[str] = "ROCM_AITER_FA"

    requires: ClassVar[tuple[str, ...]] = ("amd-aiter",)
    requires_modules: ClassVar[tuple[str, ...] | None] = ("aiter",)


class CPUMLAPrefillBackend(_Builtin):
    """CPU: MLA prefill on the CPU, through PyTorch."""

    facts_key: ClassVar[str] = "CPU"

    requires: ClassVar[tuple[str, ...]] = ("torch",)


class ZenCPUMLAPrefillBackend(_Builtin):
    """ZEN_CPU: MLA prefill on AMD Zen CPUs (zentorch)."""

    facts_key: ClassVar[str] = "ZEN_CPU"

    requires: ClassVar[tuple[str, ...]] = ("zentorch",)
