"""The implementation class: scaled dot-product attention in pure Python.

It follows the interface of attn's ``TORCH_SDPA`` implementation: the
constructor takes keyword-only ``scale`` (default ``1/sqrt(head_size)``) and
``causal``; ``forward(query, key, value)`` takes ``[..., seq, head_size]``
arrays (nested lists here; tensors for a real kernel) with the same leading
dimensions, and returns ``[..., query seq, head_size of value]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def _attend(
    query: Sequence[Sequence[float]],
    key: Sequence[Sequence[float]],
    value: Sequence[Sequence[float]],
    scale: float,
    causal: bool,
) -> list[list[float]]:
    """Attention for one ``[seq, head_size]`` matrix of queries."""
    out = []
    for i, q in enumerate(query):
        # Causal: query i sees keys 0..i (the mask is aligned top-left).
        visible = key[: i + 1] if causal else key
        scores = [scale * sum(a * b for a, b in zip(q, k, strict=True)) for k in visible]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        out.append(
            [
                sum(w * v[d] for w, v in zip(weights, value, strict=False)) / total
                for d in range(len(value[0]))
            ]
        )
    return out


class TemplateAttentionImpl:
    """Attention over nested lists, computed on the CPU."""

    def __init__(self, *, scale: float | None = None, causal: bool = False) -> None:
        """Configure the softmax *scale* (default ``1/sqrt(head_size)``) and causal masking."""
        self.scale = scale
        self.causal = causal

    def forward(self, query: Sequence[Any], key: Sequence[Any], value: Sequence[Any]) -> list[Any]:
        """Attend *query* to *key* and *value*, each ``[..., seq, head_size]``."""
        if not query or not isinstance(query[0][0], Sequence):
            head_size = len(query[0]) if query else 1
            scale = self.scale if self.scale is not None else 1 / math.sqrt(head_size)
            return _attend(query, key, value, scale, self.causal)
        return [self.forward(q, k, v) for q, k, v in zip(query, key, value, strict=True)]
