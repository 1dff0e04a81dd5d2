"""The built-in MLA prefill backends: one class per member of MLAPrefillBackendEnum."""

from __future__ import annotations

from functools import partial

from . import MLAPrefillBackend, builtin

_builtin = partial(builtin, MLAPrefillBackend, __name__)

FlashAttentionMLAPrefillBackend = _builtin(
    "FlashAttentionMLAPrefillBackend", "FLASH_ATTN", "flash-attn"
)
FlashInferMLAPrefillBackend = _builtin(
    "FlashInferMLAPrefillBackend", "FLASHINFER", "flashinfer-python"
)
TritonRaggedMLAPrefillBackend = _builtin("TritonRaggedMLAPrefillBackend", "TRITON_RAGGED", "triton")
TokenspeedMLAPrefillBackend = _builtin(
    "TokenspeedMLAPrefillBackend", "TOKENSPEED_MLA", "tokenspeed-mla"
)
RocmAiterFAMLAPrefillBackend = _builtin(
    "RocmAiterFAMLAPrefillBackend", "ROCM_AITER_FA", "amd-aiter"
)
CPUMLAPrefillBackend = _builtin("CPUMLAPrefillBackend", "CPU", "torch")
ZenCPUMLAPrefillBackend = _builtin("ZenCPUMLAPrefillBackend", "ZEN_CPU", "zentorch")
