"""The built-in MLA prefill backends: one class per member of MLAPrefillBackendEnum."""

from __future__ import annotations

from functools import partial

from . import MLAPrefillBackend, builtin

_b = partial(builtin, MLAPrefillBackend, __name__)  # _b(class name, member name, *kernel dists)

FlashAttentionMLAPrefillBackend = _b("FlashAttentionMLAPrefillBackend", "FLASH_ATTN", "flash-attn")
FlashInferMLAPrefillBackend = _b("FlashInferMLAPrefillBackend", "FLASHINFER", "flashinfer-python")
TritonRaggedMLAPrefillBackend = _b("TritonRaggedMLAPrefillBackend", "TRITON_RAGGED", "triton")
TokenspeedMLAPrefillBackend = _b("TokenspeedMLAPrefillBackend", "TOKENSPEED_MLA", "tokenspeed-mla")
RocmAiterFAMLAPrefillBackend = _b("RocmAiterFAMLAPrefillBackend", "ROCM_AITER_FA", "amd-aiter")
CPUMLAPrefillBackend = _b("CPUMLAPrefillBackend", "CPU", "torch")
ZenCPUMLAPrefillBackend = _b("ZenCPUMLAPrefillBackend", "ZEN_CPU", "zentorch")
