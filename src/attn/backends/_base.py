"""The interfaces of attn's two registries."""

from __future__ import annotations

from typing import ClassVar

from attn.registry import Backend

__all__ = ["AttentionBackend", "MLAPrefillBackend"]


class _HostBackend(Backend):
    """What both of attn's interfaces share: the hook a host runs."""

    _implements: ClassVar[str]
    """What the implementation computes, as messages say it."""

    @classmethod
    def get_impl_cls(cls) -> type:
        """The class that computes what this backend is for: a class, not an instance.

        For attention, the host instantiates it with keyword-only ``scale``
        (``None``: ``1/sqrt(head_size)``) and ``causal`` (query ``i`` sees
        keys ``0..i``), and calls ``forward(query, key, value)`` on
        ``[..., seq, head_size]`` arrays, which returns
        ``[..., query seq, head_size]``; see
        :class:`attn.backends.torch_sdpa.TorchSDPAImpl`. Import the kernel
        library here, not at module level.

        Raises:
            NotImplementedError: the backend does not provide one.
        """
        msg = (
            f"{cls.__module__}.{cls.__qualname__} does not provide an {cls._implements} "
            "implementation; override get_impl_cls()"
        )
        raise NotImplementedError(msg)


class AttentionBackend(_HostBackend):
    """Base class of every attention backend, built-in or plugin.

    A backend class is the host's handle on one attention kernel. It is
    imported only when selected, so it must import cheaply: import the kernel
    library inside methods, never at module level, and list it in
    :attr:`requires` so attn can report availability without importing it.

    A subclass that defines nothing more is a valid backend for attn (it loads
    and lists), but a host can only run it once it overrides
    :meth:`get_impl_cls`.
    """

    _implements: ClassVar[str] = "attention"

    supported_head_sizes: ClassVar[tuple[int, ...]] = ()
    """Head sizes the kernel supports; empty means any."""

    @classmethod
    def supports_head_size(cls, head_size: int) -> bool:
        """Whether the kernel handles heads of *head_size*."""
        return not cls.supported_head_sizes or head_size in cls.supported_head_sizes

    @classmethod
    def get_kv_cache_shape(
        cls, num_blocks: int, block_size: int, num_kv_heads: int, head_size: int
    ) -> tuple[int, ...]:
        """The shape of the paged KV cache the kernel reads.

        The default is the split layout ``(2, blocks, block_size, heads, head_size)``
        (keys and values stacked first); override it for other layouts.
        """
        return (2, num_blocks, block_size, num_kv_heads, head_size)


class MLAPrefillBackend(_HostBackend):
    """Base class of every MLA prefill backend, built-in or plugin.

    The same rules as :class:`AttentionBackend` apply: cheap to import,
    kernel packages named in :attr:`requires`, and :meth:`get_impl_cls`
    overridden by a backend that a host can run.
    """

    _implements: ClassVar[str] = "MLA prefill"
