"""The interfaces of attn's two registries: what a backend class is to its host.

docs/plugin-authors.md ("The kernel contract") says what a host passes to a
backend's implementation and what it gets back.
"""

from __future__ import annotations

from typing import ClassVar, NoReturn

from attn.registry import Backend

__all__ = ["AttentionBackend", "MLAPrefillBackend"]


def _no_implementation(cls: type, computes: str) -> NoReturn:
    """Raise the error of a backend class that does not override ``get_impl_cls()``."""
    msg = (
        f"{cls.__module__}.{cls.__qualname__} does not provide an {computes} "
        "implementation; override get_impl_cls()"
    )
    raise NotImplementedError(msg)


class AttentionBackend(Backend):
    """Base class of every attention backend, built-in or plugin.

    A backend class is the host's handle on one attention kernel: it says what
    the kernel needs and supports, and hands out the class that computes
    ([get_impl_cls][attn.backends.AttentionBackend.get_impl_cls]). It is
    imported when a host asks for its class (`get_class()`, selection,
    `attn list --load`), so it must import cheaply: import the kernel library inside
    methods, never at module level, and list it in `requires` so that attn
    reports availability without importing it.

    A subclass that defines nothing more is a valid backend for attn (it
    loads and lists), but a host can only run it once it overrides
    `get_impl_cls()`.
    """

    supported_head_sizes: ClassVar[tuple[int, ...]] = ()
    """Head sizes the kernel supports; empty means any (read by `supports_head_size`)."""

    @classmethod
    def get_impl_cls(cls) -> type:
        """The class that computes attention: a class, not an instance.

        The host instantiates it with keyword-only arguments and calls
        `forward` on each layer's query, key and value:

        - `Impl(*, scale=None, causal=False)`: `scale` multiplies the scores
          (`None`: `1/sqrt(head_size)`); with `causal`, query `i` sees keys
          `0..i` only (the mask aligned top-left, as
          `torch.nn.functional.scaled_dot_product_attention` aligns it).
        - `forward(query, key, value)`: arrays of shape
          `[..., seq, head_size]` with the same leading dimensions (batch,
          heads), `key` and `value` of the same `seq`, all three of one dtype
          and on one device; it returns `[..., query seq, value head_size]`
          of that dtype, on that device.

        [TorchSDPAImpl][attn.backends.torch_sdpa.TorchSDPAImpl] is attn's own.
        Import the kernel library here or in the implementation's methods,
        not at module level.

        Raises:
            NotImplementedError: the backend does not provide one.
        """
        _no_implementation(cls, "attention")

    @classmethod
    def supports_head_size(cls, head_size: int) -> bool:
        """Whether the kernel handles heads of *head_size*, as `supported_head_sizes` says."""
        return not cls.supported_head_sizes or head_size in cls.supported_head_sizes

    @classmethod
    def get_kv_cache_shape(
        cls, num_blocks: int, block_size: int, num_kv_heads: int, head_size: int
    ) -> tuple[int, ...]:
        """The shape of one layer's paged KV cache, which the host allocates for the kernel.

        A block holds `block_size` consecutive tokens of one sequence, each
        with `num_kv_heads` heads of `head_size` values. The default is the
        split layout `(2, num_blocks, block_size, num_kv_heads, head_size)`:
        index 0 of the first dimension holds keys, index 1 values. Override it
        for another layout.
        """
        return (2, num_blocks, block_size, num_kv_heads, head_size)


class MLAPrefillBackend(Backend):
    """Base class of every MLA prefill backend, built-in or plugin.

    The same rules as for
    [AttentionBackend][attn.backends.AttentionBackend] apply: cheap to
    import, kernel packages named in `requires`, and `get_impl_cls()`
    overridden by a backend that a host can run.
    """

    @classmethod
    def get_impl_cls(cls) -> type:
        """The class that computes MLA prefill: a class, not an instance.

        attn ships no MLA prefill implementation and calls none: the host's
        MLA prefill path instantiates this class and calls it with its own
        interface. Import the kernel library here or in the implementation's
        methods, not at module level.

        Raises:
            NotImplementedError: the backend does not provide one.
        """
        _no_implementation(cls, "MLA prefill")
