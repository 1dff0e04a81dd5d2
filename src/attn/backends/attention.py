"""The built-in attention backends: one class per member of AttentionBackendEnum."""

from __future__ import annotations

from functools import partial

from . import AttentionBackend, builtin
from .torch_sdpa import TorchSDPAImpl  # torch itself is imported when it computes

_b = partial(builtin, AttentionBackend, __name__)  # _b(class name, member name, *kernel dists)

FlashAttentionBackend = _b("FlashAttentionBackend", "FLASH_ATTN", "flash-attn")
FlashSinkAttentionBackend = _b("FlashSinkAttentionBackend", "FLASH_SINK_ATTN", "flash-attn")
TritonAttentionBackend = _b("TritonAttentionBackend", "TRITON_ATTN", "triton")
XFormersBackend = _b("XFormersBackend", "XFORMERS", "xformers")
RocmAttentionBackend = _b("RocmAttentionBackend", "ROCM_ATTN", "triton")
RocmAiterMLABackend = _b("RocmAiterMLABackend", "ROCM_AITER_MLA", "amd-aiter")
RocmAiterFlashAttentionBackend = _b("RocmAiterFlashAttentionBackend", "ROCM_AITER_FA", "amd-aiter")
_sdpa_impl = classmethod(lambda _: TorchSDPAImpl)
TorchSDPABackend = _b("TorchSDPABackend", "TORCH_SDPA", "torch", get_impl_cls=_sdpa_impl)
FlashInferBackend = _b("FlashInferBackend", "FLASHINFER", "flashinfer-python")
FlashInferMLABackend = _b("FlashInferMLABackend", "FLASHINFER_MLA", "flashinfer-python")
TritonMLABackend = _b("TritonMLABackend", "TRITON_MLA", "triton")
CutlassMLABackend = _b("CutlassMLABackend", "CUTLASS_MLA", "nvidia-cutlass")
FlashMLABackend = _b("FlashMLABackend", "FLASHMLA", "flash-mla")
FlashMLASparseBackend = _b("FlashMLASparseBackend", "FLASHMLA_SPARSE", "flash-mla")
FlashAttentionMLABackend = _b("FlashAttentionMLABackend", "FLASH_ATTN_MLA", "flash-attn")
PallasAttentionBackend = _b("PallasAttentionBackend", "PALLAS", "torch-xla")
IpexAttentionBackend = _b("IpexAttentionBackend", "IPEX", "intel-extension-for-pytorch")
NoAttentionBackend = _b("NoAttentionBackend", "NO_ATTENTION")
FlexAttentionBackend = _b("FlexAttentionBackend", "FLEX_ATTENTION", "torch")
TreeAttentionBackend = _b("TreeAttentionBackend", "TREE_ATTN", "triton")
RocmAiterUnifiedAttentionBackend = _b(
    "RocmAiterUnifiedAttentionBackend", "ROCM_AITER_UNIFIED_ATTN", "amd-aiter"
)
CPUAttentionBackend = _b("CPUAttentionBackend", "CPU_ATTN", "torch")
