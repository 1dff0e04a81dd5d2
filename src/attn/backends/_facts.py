"""What each built-in kernel supports, as data, and the order attn's registries try them in.

The facts come from vLLM, the host the seeds were taken from: each row names
the vLLM file it was read from. The built-in classes in
`attn.backends.attention` and `attn.backends.mla_prefill` check a
configuration against their row (``validate_configuration``, which imports
this module: listing imports those classes, and needs no facts), and
docs/selection.md renders the same tables; a test keeps all three in step.

The settings, all optional (a setting not given is not checked; settings a
row does not know are ignored):

- ``device``: ``"cuda"``, ``"rocm"``, ``"cpu"``, ``"tpu"`` or ``"xpu"``;
- ``capability``: a CUDA compute capability ``(major, minor)``, checked when
  ``device`` is ``"cuda"`` or not given;
- ``dtype`` and ``kv_cache_dtype``: names (``"bfloat16"``, ``"fp8"``), or a
  torch dtype for ``dtype``;
- ``head_size``, ``block_size``: ints;
- ``use_mla``, ``use_sparse``: bools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attn.registry.selection import dtype_name

if TYPE_CHECKING:
    from collections.abc import Mapping

    from attn.registry.enum import BackendEnumMeta

__all__ = [
    "ATTENTION",
    "MLA_PREFILL",
    "Facts",
    "Sizes",
    "attention_priorities",
    "mla_prefill_priorities",
]

Capability = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Sizes:
    """The sizes a kernel takes: the listed ones, else multiples of *multiple* in a range."""

    listed: tuple[int, ...] = ()
    multiple: int = 1
    low: int = 1
    high: int | None = None

    def accepts(self, size: int) -> bool:
        """Whether the kernel takes *size*."""
        if self.listed:
            return size in self.listed
        in_range = self.low <= size and (self.high is None or size <= self.high)
        return in_range and size % self.multiple == 0

    def __str__(self) -> str:
        """As the tables say it: ``64, 128``, ``multiple of 8 up to 256``, ``any``."""
        if self.listed:
            return ", ".join(map(str, self.listed))
        words = [f"multiple of {self.multiple}"] if self.multiple > 1 else []
        if self.low > 1:
            words.append(f"at least {self.low}")
        if self.high is not None:
            words.append(f"up to {self.high}")
        return " ".join(words) or "any"


ANY = Sizes()


def _version(capability: Capability) -> str:
    return f"{capability[0]}.{capability[1]}"


@dataclass(frozen=True, slots=True)
class Facts:
    """What one kernel supports. Empty tuples and ``None`` mean "any"."""

    source: str
    """The vLLM file the facts were read from."""
    devices: tuple[str, ...] = ("cuda",)
    capability: tuple[Capability, Capability | None] | None = None
    """CUDA capabilities, inclusive: ``((8, 0), None)`` is 8.0 and above."""
    dtypes: tuple[str, ...] = ("float16", "bfloat16")
    kv_cache_dtypes: tuple[str, ...] = ("auto", "float16", "bfloat16")
    head_sizes: Sizes = ANY
    block_sizes: Sizes = ANY
    mla: bool = False
    sparse: bool = False

    def check(self, settings: Mapping[str, object]) -> list[str]:
        """Why this kernel cannot run *settings*; empty when it can."""
        reasons = []
        device = settings.get("device")
        if device is not None and self.devices and device not in self.devices:
            reasons.append(f"runs on {' or '.join(self.devices)}, not {device!r}")
        capability = settings.get("capability")
        if capability is not None and device in (None, "cuda") and self.capability is not None:
            reasons.extend(self._check_capability(capability))
        for key, supported in (("dtype", self.dtypes), ("kv_cache_dtype", self.kv_cache_dtypes)):
            value = settings.get(key)
            if value is not None and supported and dtype_name(value) not in supported:
                reasons.append(
                    f"{key} {dtype_name(value)!r} not supported ({', '.join(supported)})"
                )
        for key, sizes in (("head_size", self.head_sizes), ("block_size", self.block_sizes)):
            size = settings.get(key)
            if isinstance(size, int) and not sizes.accepts(size):
                reasons.append(f"{key} {size} not supported ({sizes})")
        for key, kind, wanted in (
            ("use_mla", "MLA", self.mla),
            ("use_sparse", "sparse", self.sparse),
        ):
            value = settings.get(key)
            if value is not None and bool(value) != wanted:
                reasons.append(f"{kind} attention only" if wanted else f"no {kind} attention")
        return reasons

    def _check_capability(self, capability: object) -> list[str]:
        if not (
            isinstance(capability, tuple)
            and len(capability) == 2  # noqa: PLR2004 - (major, minor)
            and all(isinstance(part, int) for part in capability)
        ):
            return [f"capability must be a (major, minor) pair of ints, not {capability!r}"]
        low, high = self.capability or ((0, 0), None)
        if low <= capability and (high is None or capability <= high):
            return []
        return [f"capability {_version(capability)} not supported ({self.capabilities})"]

    @property
    def capabilities(self) -> str:
        """The capability range as the tables say it: ``8.0 and above``, ``10.x``."""
        if self.capability is None:
            return "any"
        low, high = self.capability
        if high is None:
            return f"{_version(low)} and above"
        if low[1] == 0 and high[1] == MAX_MINOR:
            majors = range(low[0], high[0] + 1)
            return ", ".join(f"{major}.x" for major in majors)
        return f"{_version(low)} to {_version(high)}"


#: The minor version that stands for "every minor of this major".
MAX_MINOR = 9


def _majors(first: int, last: int | None = None) -> tuple[Capability, Capability]:
    return (first, 0), (first if last is None else last, MAX_MINOR)


_HALF = ("float16", "bfloat16")
_HALF_AND_FULL = ("float16", "bfloat16", "float32")
_FP8 = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3")
_FP8_BOTH = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
_TRITON_KV = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")
_MLA_HEAD = Sizes((576,))
_BY_16 = Sizes(multiple=16)
_FA_HEADS = Sizes(multiple=8, high=256)
_V1 = "vllm/v1/attention/backends/"

ATTENTION: dict[str, Facts] = {
    "FLASH_ATTN": Facts(
        _V1 + "flash_attn.py",
        devices=("cuda", "xpu"),
        capability=((8, 0), None),
        kv_cache_dtypes=_FP8,
        head_sizes=_FA_HEADS,
        block_sizes=_BY_16,
    ),
    "FLASH_SINK_ATTN": Facts(
        _V1 + "flash_sink_attn.py",
        capability=((8, 0), None),
        kv_cache_dtypes=_FP8,
        head_sizes=_FA_HEADS,
        block_sizes=_BY_16,
    ),
    "TRITON_ATTN": Facts(
        _V1 + "triton_attn.py",
        devices=("cuda", "rocm", "xpu"),
        dtypes=_HALF_AND_FULL,
        kv_cache_dtypes=_TRITON_KV,
        head_sizes=Sizes(low=32),
        block_sizes=_BY_16,
    ),
    "XFORMERS": Facts(
        _V1 + "xformers.py",
        head_sizes=Sizes(multiple=8, low=32, high=256),
        block_sizes=_BY_16,
    ),
    "ROCM_ATTN": Facts(
        _V1 + "rocm_attn.py",
        devices=("rocm",),
        dtypes=_HALF_AND_FULL,
        kv_cache_dtypes=_TRITON_KV,
        head_sizes=Sizes((32, 64, 80, 96, 128, 160, 192, 224, 256)),
        block_sizes=_BY_16,
    ),
    "ROCM_AITER_MLA": Facts(
        _V1 + "mla/rocm_aiter_mla.py",
        devices=("rocm",),
        kv_cache_dtypes=("auto", "fp8"),
        head_sizes=_MLA_HEAD,
        block_sizes=Sizes((1,)),
        mla=True,
    ),
    "ROCM_AITER_FA": Facts(
        _V1 + "rocm_aiter_fa.py",
        devices=("rocm",),
        kv_cache_dtypes=_TRITON_KV,
        head_sizes=Sizes((64, 128, 256)),
        block_sizes=_BY_16,
    ),
    "TORCH_SDPA": Facts(
        "attn's own (attn/backends/torch_sdpa.py): any device torch runs on",
        devices=(),
        dtypes=_HALF_AND_FULL,
        kv_cache_dtypes=(),
    ),
    "FLASHINFER": Facts(
        _V1 + "flashinfer.py",
        capability=((7, 5), (12, 1)),
        kv_cache_dtypes=_FP8_BOTH,
        head_sizes=Sizes((64, 128, 256)),
        block_sizes=Sizes((16, 32, 64)),
    ),
    "FLASHINFER_MLA": Facts(
        _V1 + "mla/flashinfer_mla.py",
        capability=_majors(10),
        kv_cache_dtypes=_FP8,
        head_sizes=_MLA_HEAD,
        block_sizes=Sizes((32, 64)),
        mla=True,
    ),
    "TRITON_MLA": Facts(
        _V1 + "mla/triton_mla.py",
        devices=("cuda", "rocm", "xpu"),
        head_sizes=_MLA_HEAD,
        mla=True,
    ),
    "CUTLASS_MLA": Facts(
        _V1 + "mla/cutlass_mla.py",
        capability=_majors(10),
        kv_cache_dtypes=_FP8,
        head_sizes=_MLA_HEAD,
        block_sizes=Sizes((128,)),
        mla=True,
    ),
    "FLASHMLA": Facts(
        _V1 + "mla/flashmla.py",
        capability=_majors(9, 10),
        kv_cache_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3"),
        head_sizes=_MLA_HEAD,
        block_sizes=Sizes((64,)),
        mla=True,
    ),
    "FLASHMLA_SPARSE": Facts(
        _V1 + "mla/flashmla_sparse.py",
        capability=_majors(9, 10),
        dtypes=("bfloat16",),
        kv_cache_dtypes=("auto", "bfloat16", "fp8_ds_mla", "fp8"),
        head_sizes=_MLA_HEAD,
        block_sizes=Sizes((64,)),
        mla=True,
        sparse=True,
    ),
    "FLASH_ATTN_MLA": Facts(
        _V1 + "mla/flashattn_mla.py",
        capability=_majors(9),
        head_sizes=_MLA_HEAD,
        block_sizes=_BY_16,
        mla=True,
    ),
    "PALLAS": Facts(
        _V1 + "pallas.py",
        devices=("tpu",),
        dtypes=("bfloat16",),
        kv_cache_dtypes=(),
        head_sizes=Sizes(multiple=128),
    ),
    "IPEX": Facts(
        _V1 + "ipex_attn.py",
        devices=("xpu", "cpu"),
        dtypes=_HALF_AND_FULL,
        kv_cache_dtypes=(),
    ),
    "NO_ATTENTION": Facts(
        "vLLM's registry: for models without attention layers",
        devices=(),
        dtypes=(),
        kv_cache_dtypes=(),
    ),
    "FLEX_ATTENTION": Facts(
        _V1 + "flex_attention.py",
        devices=("cuda", "cpu"),
        dtypes=_HALF_AND_FULL,
        block_sizes=_BY_16,
    ),
    "TREE_ATTN": Facts(
        _V1 + "tree_attn.py",
        devices=("cuda", "rocm"),
        head_sizes=Sizes((32, 64, 96, 128, 160, 192, 224, 256)),
        block_sizes=_BY_16,
    ),
    "ROCM_AITER_UNIFIED_ATTN": Facts(
        _V1 + "rocm_aiter_unified_attn.py",
        devices=("rocm",),
        kv_cache_dtypes=_TRITON_KV,
        head_sizes=Sizes(low=32),
        block_sizes=_BY_16,
    ),
    "CPU_ATTN": Facts(
        _V1 + "cpu_attn.py",
        devices=("cpu",),
        dtypes=_HALF_AND_FULL,
        kv_cache_dtypes=("auto",),
        head_sizes=Sizes((32, 64, 80, 96, 112, 128, 160, 192, 224, 256)),
    ),
}


def _prefill(
    file: str,
    devices: tuple[str, ...],
    capability: tuple[Capability, Capability | None] | None = None,
    dtypes: tuple[str, ...] = _HALF,
) -> Facts:
    """An MLA prefill kernel's row: it reads no paged KV cache, so no cache or block limit."""
    source = "vllm/v1/attention/backends/mla/prefill/" + file
    return Facts(source, devices, capability, dtypes, kv_cache_dtypes=(), mla=True)


MLA_PREFILL: dict[str, Facts] = {
    "FLASH_ATTN": _prefill("flash_attn.py", ("cuda", "rocm", "xpu"), ((8, 0), None)),
    "FLASHINFER": _prefill("flashinfer.py", ("cuda",), _majors(10)),
    "TRITON_RAGGED": _prefill("trtllm_ragged.py", ("cuda",), _majors(10)),
    "TOKENSPEED_MLA": _prefill("tokenspeed_mla.py", ("cuda",), _majors(10)),
    "ROCM_AITER_FA": _prefill("aiter_flash_attn.py", ("rocm",)),
    "CPU": _prefill("cpu_sdpa.py", ("cpu",), dtypes=_HALF_AND_FULL),
    "ZEN_CPU": _prefill("zen_cpu_sdpa.py", ("cpu",), dtypes=_HALF_AND_FULL),
}

# -- the hosts' orders: vLLM's platform modules and MLA prefill selector -----------

#: Per device: (without MLA, with MLA), each as (capability 10.x, every other).
_ATTENTION_ORDER: dict[str, tuple[tuple[tuple[str, ...], ...], ...]] = {
    "cuda": (
        (
            ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION"),
            ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION"),
        ),
        (
            (
                "FLASHINFER_MLA",
                "CUTLASS_MLA",
                "FLASH_ATTN_MLA",
                "FLASHMLA",
                "TRITON_MLA",
                "FLASHMLA_SPARSE",
            ),
            ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", "FLASHMLA_SPARSE"),
        ),
    ),
    "rocm": (
        (("ROCM_ATTN", "ROCM_AITER_FA", "ROCM_AITER_UNIFIED_ATTN", "TRITON_ATTN"),) * 2,
        (("ROCM_AITER_MLA", "TRITON_MLA"),) * 2,
    ),
    "cpu": ((("CPU_ATTN",),) * 2, ((),) * 2),
    "tpu": ((("PALLAS",),) * 2, (("PALLAS",),) * 2),  # vLLM's TPU ignores use_mla
    "xpu": ((("FLASH_ATTN", "TRITON_ATTN"),) * 2, (("TRITON_MLA",),) * 2),
}

_MLA_PREFILL_ORDER: dict[str, tuple[tuple[str, ...], ...]] = {
    "cuda": (("FLASH_ATTN", "TRITON_RAGGED", "FLASHINFER", "TOKENSPEED_MLA"), ("FLASH_ATTN",)),
    "rocm": (("ROCM_AITER_FA", "FLASH_ATTN"),) * 2,
    "cpu": (("ZEN_CPU", "CPU"),) * 2,
    "tpu": ((), ()),
    "xpu": (("FLASH_ATTN",),) * 2,
}

_BLACKWELL = 10


def _pick(orders: tuple[tuple[str, ...], ...], capability: object) -> list[str]:
    """The 10.x list for a capability of major 10, else the other one."""
    major = capability[0] if isinstance(capability, tuple) and capability else None
    return list(orders[0] if major == _BLACKWELL else orders[1])


def _with_custom(registry: BackendEnumMeta, names: list[str]) -> list[str]:
    """*names*, then CUSTOM while something is registered for it."""
    if "CUSTOM" in registry.__members__ and registry["CUSTOM"].is_overridden():
        names.append("CUSTOM")
    return names


def attention_priorities(registry: BackendEnumMeta, **settings: object) -> list[str]:
    """``AttentionBackendEnum``'s order for *settings*: by device, capability and ``use_mla``.

    Without a device, CUDA's order. An unknown device has no built-in
    candidate; CUSTOM comes last while something is registered for it.
    """
    device = settings.get("device") or "cuda"
    plain, mla = _ATTENTION_ORDER.get(str(device), (((), ()), ((), ())))
    orders = mla if settings.get("use_mla") else plain
    return _with_custom(registry, _pick(orders, settings.get("capability")))


def mla_prefill_priorities(registry: BackendEnumMeta, **settings: object) -> list[str]:
    """``MLAPrefillBackendEnum``'s order for *settings*: by device and capability."""
    device = settings.get("device") or "cuda"
    orders = _MLA_PREFILL_ORDER.get(str(device), ((), ()))
    return _with_custom(registry, _pick(orders, settings.get("capability")))
