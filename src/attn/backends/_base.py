"""The interfaces of attn's two registries, and the factory of their built-in classes."""

from __future__ import annotations

from typing import ClassVar, NoReturn, TypeVar, cast

from attn import _fork
from attn.registry import Backend

__all__ = ["AttentionBackend", "MLAPrefillBackend", "builtin"]


def _no_implementation(cls: type, computes: str) -> NoReturn:
    name = f"{cls.__module__}.{cls.__qualname__}"
    msg = f"{name} does not provide an {computes} implementation; override get_impl_cls()"
    raise NotImplementedError(msg)


class AttentionBackend(Backend):
    """Base class of every attention backend, built-in or plugin.

    Listing and selection import it: import the kernel library inside methods and name it
    in `requires`. A host runs the backend once it overrides `get_impl_cls()`.
    """

    supported_head_sizes: ClassVar[tuple[int, ...]] = ()
    """Head sizes the kernel supports; empty means any (read by `supports_head_size`)."""

    @classmethod
    def get_impl_cls(cls) -> type:
        """The class that computes attention (docs/plugin-authors.md, "The kernel contract").

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
        """The shape of one layer's paged KV cache: keys at index 0, values at 1."""
        return (2, num_blocks, block_size, num_kv_heads, head_size)


class MLAPrefillBackend(Backend):
    """Base class of every MLA prefill backend; the rules of `AttentionBackend` apply."""

    @classmethod
    def get_impl_cls(cls) -> type:
        """The class that computes MLA prefill (attn ships and calls none).

        Raises:
            NotImplementedError: the backend does not provide one.
        """
        _no_implementation(cls, "MLA prefill")


class _Builtin(Backend):
    facts_key: ClassVar[str]  # the member's name: its row in attn.backends._facts

    @classmethod
    def validate_configuration(cls, /, **settings: object) -> list[str]:
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
    """The built-in class *module*.*name* of member *key*, whose kernel needs *requires*."""
    namespace.update(
        __module__=module,
        __qualname__=name,
        __doc__=f"{key}: a built-in backend; its kernel needs {', '.join(requires) or 'nothing'}.",
        facts_key=key,
        requires=requires,
        requires_modules=tuple(_MODULES.get(r, r.replace("-", "_")) for r in requires),
    )
    return cast("type[_B]", type(name, (_Builtin, base), namespace))
