"""The interfaces of attn's two registries, and the factory of their built-in classes."""

from __future__ import annotations

from typing import ClassVar, NoReturn, TypeVar, cast

from attn import _fork
from attn.registry import Backend

__all__ = ["AttentionBackend", "MLAPrefillBackend", "builtin"]


def _no_implementation(cls: type, computes: str) -> NoReturn:
    msg = (
        f"{cls.__module__}.{cls.__qualname__} does not provide an {computes} "
        "implementation; override get_impl_cls()"
    )
    raise NotImplementedError(msg)


class AttentionBackend(Backend):
    """Base class of every attention backend, built-in or plugin.

    The host's handle on one attention kernel: what it needs and supports, and
    the class that computes ([get_impl_cls][attn.backends.AttentionBackend.get_impl_cls]).
    Selection and `attn list --load` import it, so it must import cheaply: the
    kernel library is imported inside methods and named in `requires`. A subclass
    that defines nothing more loads and lists; a host runs it once it overrides
    `get_impl_cls()`.
    """

    supported_head_sizes: ClassVar[tuple[int, ...]] = ()
    """Head sizes the kernel supports; empty means any (read by `supports_head_size`)."""

    @classmethod
    def get_impl_cls(cls) -> type:
        """The class that computes attention: a class, not an instance.

        The host calls `Impl(*, scale=None, causal=False)`, then
        `forward(query, key, value)` on `[..., seq, head_size]` arrays of one
        dtype and device, and gets `[..., query seq, value head_size]` back
        (docs/plugin-authors.md, "The kernel contract").
        [TorchSDPAImpl][attn.backends.torch_sdpa.TorchSDPAImpl] is attn's own.
        Import the kernel library here or in the implementation, not at module level.

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

        The default is `(2, num_blocks, block_size, num_kv_heads, head_size)`:
        keys at index 0, values at 1, a block holding `block_size` tokens of
        one sequence. Override it for another layout.
        """
        return (2, num_blocks, block_size, num_kv_heads, head_size)


class MLAPrefillBackend(Backend):
    """Base class of every MLA prefill backend, built-in or plugin.

    The rules of [AttentionBackend][attn.backends.AttentionBackend] apply:
    cheap to import, kernel packages in `requires`, `get_impl_cls()` to run.
    """

    @classmethod
    def get_impl_cls(cls) -> type:
        """The class that computes MLA prefill: a class, not an instance.

        attn ships and calls none: the host's MLA prefill path uses its own interface.

        Raises:
            NotImplementedError: the backend does not provide one.
        """
        _no_implementation(cls, "MLA prefill")


class _Builtin(Backend):
    facts_key: ClassVar[str]  # the member's name: its row in attn.backends._facts

    @classmethod
    def validate_configuration(cls, **settings: object) -> list[str]:
        """Why the kernel cannot run with *settings*; empty when it can (docs/selection.md)."""
        with _fork.importing():
            from . import _facts  # noqa: PLC0415 - listing imports the classes, not the facts

        table = _facts.MLA_PREFILL if issubclass(cls, MLAPrefillBackend) else _facts.ATTENTION
        return table[cls.facts_key].check(settings)


#: Import names of the kernel packages whose distribution name does not give them.
_MODULES = {"amd-aiter": "aiter", "flashinfer-python": "flashinfer", "nvidia-cutlass": "cutlass"}

_B = TypeVar("_B", AttentionBackend, MLAPrefillBackend)


def builtin(
    base: type[_B], module: str, name: str, key: str, *requires: str, **namespace: object
) -> type[_B]:
    """The built-in class *module*.*name* of member *key*, whose kernel needs *requires*.

    It imports none of them, and checks settings against its row of `attn.backends._facts`.
    """
    namespace.update(
        __module__=module,
        __qualname__=name,
        __doc__=f"{key}: a built-in backend; its kernel needs {', '.join(requires) or 'nothing'}.",
        facts_key=key,
        requires=requires,
        requires_modules=tuple(_MODULES.get(r, r.replace("-", "_")) for r in requires),
    )
    return cast("type[_B]", type(name, (_Builtin, base), namespace))
