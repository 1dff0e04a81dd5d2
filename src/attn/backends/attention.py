"""The built-in attention backends: one class per member of AttentionBackendEnum."""

from __future__ import annotations

from functools import partial

from . import AttentionBackend, builtin
from .torch_sdpa import TorchSDPAImpl  # torch itself is imported when it computes

_builtin = partial(builtin, AttentionBackend, __name__)

FlashAttentionBackend = _builtin("FlashAttentionBackend", "FLASH_ATTN", "flash-attn")
FlashSinkAttentionBackend = _builtin("FlashSinkAttentionBackend", "FLASH_SINK_ATTN", "flash-attn")
TritonAttentionBackend = _builtin("TritonAttentionBackend", "TRITON_ATTN", "triton")
XFormersBackend = _builtin("XFormersBackend", "XFORMERS", "xformers")
RocmAttentionBackend = _builtin("RocmAttentionBackend", "ROCM_ATTN", "triton")
RocmAiterMLABackend = _builtin("RocmAiterMLABackend", "ROCM_AITER_MLA", "amd-aiter")
RocmAiterFlashAttentionBackend = _builtin(
    "RocmAiterFlashAttentionBackend", "ROCM_AITER_FA", "amd-aiter"
)
TorchSDPABackend = _builtin(
    "TorchSDPABackend", "TORCH_SDPA", "torch", get_impl_cls=classmethod(lambda _: TorchSDPAImpl)
)
FlashInferBackend = _builtin("FlashInferBackend", "FLASHINFER", "flashinfer-python")
FlashInferMLABackend = _builtin("FlashInferMLABackend", "FLASHINFER_MLA", "flashinfer-python")
TritonMLABackend = _builtin("TritonMLABackend", "TRITON_MLA", "triton")
CutlassMLABackend = _builtin("CutlassMLABackend", "CUTLASS_MLA", "nvidia-cutlass")
FlashMLABackend = _builtin("FlashMLABackend", "FLASHMLA", "flash-mla")
FlashMLASparseBackend = _builtin("FlashMLASparseBackend", "FLASHMLA_SPARSE", "flash-mla")
FlashAttentionMLABackend = _builtin("FlashAttentionMLABackend", "FLASH_ATTN_MLA", "flash-attn")
PallasAttentionBackend = _builtin("PallasAttentionBackend", "PALLAS", "torch-xla")
IpexAttentionBackend = _builtin("IpexAttentionBackend", "IPEX", "intel-extension-for-pytorch")
NoAttentionBackend = _builtin("NoAttentionBackend", "NO_ATTENTION")
FlexAttentionBackend = _builtin("FlexAttentionBackend", "FLEX_ATTENTION", "torch")
TreeAttentionBackend = _builtin("TreeAttentionBackend", "TREE_ATTN", "triton")
RocmAiterUnifiedAttentionBackend = _builtin(
    "RocmAiterUnifiedAttentionBackend", "ROCM_AITER_UNIFIED_ATTN", "amd-aiter"
)
CPUAttentionBackend = _builtin("CPUAttentionBackend", "CPU_ATTN", "torch")
