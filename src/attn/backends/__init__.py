"""The attention host: interfaces, the two registries, the built-in backends."""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, ClassVar, NoReturn, TypeVar, cast

from attn import _fork
from attn.registry import Backend, BackendEnum, PluginBackend
from attn.registry.enum import registration

if TYPE_CHECKING:
    from collections.abc import Callable

    from typing_extensions import Self

__all__ = [
    "AttentionBackend",
    "AttentionBackendEnum",
    "MLAPrefillBackend",
    "MLAPrefillBackendEnum",
    "register_backend",
    "register_mla_prefill_backend",
]


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
    doc = f"{key}: a built-in backend; its kernel needs {', '.join(requires) or 'nothing'}."
    modules = tuple(_MODULES.get(r, r.replace("-", "_")) for r in requires)
    namespace.update(__module__=module, __qualname__=name, __doc__=doc, facts_key=key)
    namespace.update(requires=requires, requires_modules=modules)
    return cast("type[_B]", type(name, (_Builtin, base), namespace))


class AttentionBackendEnum(
    BackendEnum,
    group="attn.backends",
    host="attn",
    interface=AttentionBackend,
    noun="attention backend",
    register_hint="attn.register_backend(AttentionBackendEnum.NAME, 'module:Class')",
):
    """The attention backends: built-ins here, plugins from ``attn.backends``."""

    FLASH_ATTN = "attn.backends.attention:FlashAttentionBackend"
    FLASH_SINK_ATTN = "attn.backends.attention:FlashSinkAttentionBackend"
    TRITON_ATTN = "attn.backends.attention:TritonAttentionBackend"
    XFORMERS = "attn.backends.attention:XFormersBackend"
    ROCM_ATTN = "attn.backends.attention:RocmAttentionBackend"
    ROCM_AITER_MLA = "attn.backends.attention:RocmAiterMLABackend"
    ROCM_AITER_FA = "attn.backends.attention:RocmAiterFlashAttentionBackend"
    TORCH_SDPA = "attn.backends.attention:TorchSDPABackend"
    FLASHINFER = "attn.backends.attention:FlashInferBackend"
    FLASHINFER_MLA = "attn.backends.attention:FlashInferMLABackend"
    TRITON_MLA = "attn.backends.attention:TritonMLABackend"
    CUTLASS_MLA = "attn.backends.attention:CutlassMLABackend"
    FLASHMLA = "attn.backends.attention:FlashMLABackend"
    FLASHMLA_SPARSE = "attn.backends.attention:FlashMLASparseBackend"
    FLASH_ATTN_MLA = "attn.backends.attention:FlashAttentionMLABackend"
    PALLAS = "attn.backends.attention:PallasAttentionBackend"
    IPEX = "attn.backends.attention:IpexAttentionBackend"
    NO_ATTENTION = "attn.backends.attention:NoAttentionBackend"
    FLEX_ATTENTION = "attn.backends.attention:FlexAttentionBackend"
    TREE_ATTN = "attn.backends.attention:TreeAttentionBackend"
    ROCM_AITER_UNIFIED_ATTN = "attn.backends.attention:RocmAiterUnifiedAttentionBackend"
    CPU_ATTN = "attn.backends.attention:CPUAttentionBackend"
    CUSTOM = None

    @classmethod
    def priorities(cls, /, **settings: object) -> list[str]:
        """VLLM's order for the ``device``, ``capability`` and ``use_mla`` settings."""
        with _fork.importing():
            from . import _facts  # noqa: PLC0415 - a lookup needs no facts
        return _facts.priorities(cls, **settings)

    if TYPE_CHECKING:  # classes of AttentionBackend, for type checkers

        def get_class(self) -> type[AttentionBackend]: ...  # noqa: D102
        @classmethod
        def lookup(cls, name: str) -> Self | PluginBackend[AttentionBackend]: ...  # noqa: D102


class MLAPrefillBackendEnum(
    BackendEnum,
    group="attn.mla_prefill_backends",
    host="attn",
    interface=MLAPrefillBackend,
    noun="MLA prefill backend",
    register_hint="attn.register_mla_prefill_backend(MLAPrefillBackendEnum.NAME, 'module:Class')",
):
    """The MLA prefill backends: built-ins here, plugins from ``attn.mla_prefill_backends``."""

    FLASH_ATTN = "attn.backends.mla_prefill:FlashAttentionMLAPrefillBackend"
    FLASHINFER = "attn.backends.mla_prefill:FlashInferMLAPrefillBackend"
    TRITON_RAGGED = "attn.backends.mla_prefill:TritonRaggedMLAPrefillBackend"
    TOKENSPEED_MLA = "attn.backends.mla_prefill:TokenspeedMLAPrefillBackend"
    ROCM_AITER_FA = "attn.backends.mla_prefill:RocmAiterFAMLAPrefillBackend"
    CPU = "attn.backends.mla_prefill:CPUMLAPrefillBackend"
    ZEN_CPU = "attn.backends.mla_prefill:ZenCPUMLAPrefillBackend"
    CUSTOM = None

    @classmethod
    def priorities(cls, /, **settings: object) -> list[str]:
        """VLLM's MLA prefill order for the ``device`` and ``capability`` settings."""
        with _fork.importing():
            from . import _facts  # noqa: PLC0415 - a lookup needs no facts
        return _facts.priorities(cls, **settings)

    if TYPE_CHECKING:  # classes of MLAPrefillBackend, for type checkers

        def get_class(self) -> type[MLAPrefillBackend]: ...  # noqa: D102
        @classmethod
        def lookup(cls, name: str) -> Self | PluginBackend[MLAPrefillBackend]: ...  # noqa: D102


def register_backend(
    backend: AttentionBackendEnum | PluginBackend[AttentionBackend], class_path: str | None = None
) -> Callable[[type], type]:
    """Register an attention backend class at runtime, replacing a plugin's entry for the name.

    Without *class_path* it is a decorator of the class; with *class_path* (``module:QualName``
    or ``module.QualName``) it records that path and returns an identity function.
    """
    return registration(AttentionBackendEnum, backend, class_path)


def register_mla_prefill_backend(
    backend: MLAPrefillBackendEnum | PluginBackend[MLAPrefillBackend], class_path: str | None = None
) -> Callable[[type], type]:
    """Register an MLA prefill backend class at runtime; see `register_backend()`."""
    return registration(MLAPrefillBackendEnum, backend, class_path)


def _deprecated_alias(owner: str) -> type[AttentionBackendEnum]:
    # _Backend, the seeds' name for the attention registry, with its warning.
    msg = f"{owner}._Backend is deprecated; use attn.AttentionBackendEnum"
    caller = sys._getframe(2).f_code.co_name  # noqa: SLF001 - what asked for _Backend
    if caller != "_handle_fromlist":  # `from attn import _Backend` asks twice: warn once
        warnings.warn(msg, DeprecationWarning, stacklevel=3)  # the code that touched _Backend
    return AttentionBackendEnum


def __getattr__(name: str) -> object:
    if name == "_Backend":
        return _deprecated_alias(__name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
