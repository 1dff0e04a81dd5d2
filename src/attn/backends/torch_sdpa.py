"""The attention implementation of ``TORCH_SDPA``; torch is imported when it computes."""

from __future__ import annotations

from typing import Any

__all__ = ["TorchSDPAImpl"]


class TorchSDPAImpl:
    """Attention through `torch.nn.functional.scaled_dot_product_attention()`."""

    def __init__(self, *, scale: float | None = None, causal: bool = False) -> None:
        """Configure the softmax *scale* (default ``1/sqrt(head_size)``) and masking."""
        self.scale, self.causal = scale, causal

    def forward(self, query: Any, key: Any, value: Any) -> Any:  # noqa: ANN401 - torch tensors
        """Attend *query* to *key* and *value* (``[..., seq, head_size]`` tensors)."""
        from torch.nn.functional import scaled_dot_product_attention as sdpa  # noqa: PLC0415

        return sdpa(query, key, value, is_causal=self.causal, scale=self.scale)
