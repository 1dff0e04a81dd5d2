"""What each built-in kernel supports (from vLLM; docs/selection.md shows it), and the orders."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attn.backends import MLAPrefillBackendEnum
from attn.registry.selection import dtype_name

if TYPE_CHECKING:
    from collections.abc import Mapping

    from attn.registry.enum import BackendEnumMeta

Capability = tuple[int, int]
Order = tuple[tuple[str, ...], tuple[str, ...]]  # (on capability 10.x, on every other)
#: The minor version that stands for "every minor of this major".
MAX_MINOR = 9
_BLACKWELL = 10  # the major version of capability 10.x, whose orders differ


@dataclass(frozen=True, slots=True)
class Sizes:
    """The sizes a kernel takes: the listed ones, else multiples of *multiple* in a range."""

    listed: tuple[int, ...] = ()
    multiple: int = 1
    low: int = 1
    high: int | None = None

    def accepts(self, size: int) -> bool:
        in_range = self.low <= size <= (self.high or size) and size % self.multiple == 0
        return size in self.listed if self.listed else in_range

    def refuses(self, key: str, size: object) -> list[str]:
        """Why the setting *key* = *size* (an int, or a numpy integer) is refused, if it is."""
        index = getattr(type(size), "__index__", None)
        if isinstance(size, bool) or (size is not None and index is None):  # True is no size
            return [f"{key} must be an int, not {size!r}"]
        if index is None or self.accepts(number := index(size)):
            return []
        return [f"{key} {size} not supported ({self if number > 0 else 'sizes are positive'})"]

    def __str__(self) -> str:
        """As the tables say it: ``64, 128``, ``multiple of 8 up to 256``, ``any``."""
        if self.listed:
            return ", ".join(map(str, self.listed))
        words = [f"multiple of {self.multiple}"] if self.multiple > 1 else []
        words += [f"at least {self.low}"] if self.low > 1 else []
        words += [f"up to {self.high}"] if self.high is not None else []
        return " ".join(words) or "any"


def _version(capability: Capability) -> str:
    return f"{capability[0]}.{capability[1]}"


@dataclass(frozen=True, slots=True)
class Facts:
    """What one kernel supports. Empty tuples and ``None`` mean "any"."""

    source: str  # the vLLM file the facts were read from
    devices: tuple[str, ...] = ("cuda",)
    capability: tuple[Capability, Capability | None] | None = None  # inclusive; None: no top
    dtypes: tuple[str, ...] = ("float16", "bfloat16")
    kv_cache_dtypes: tuple[str, ...] = ("auto", "float16", "bfloat16")
    head_sizes: Sizes = Sizes()
    block_sizes: Sizes = Sizes()
    mla: bool = False
    sparse: bool = False

    def check(self, settings: Mapping[str, object]) -> list[str]:
        """Why this kernel cannot run *settings*; empty when it can."""
        reasons, device = [], settings.get("device")
        if device is not None and self.devices and device not in self.devices:
            reasons.append(f"runs on {' or '.join(self.devices)}, not {device!r}")
        capability = settings.get("capability")
        if capability is not None and device in (None, "cuda"):  # a malformed one: every kernel
            reasons.extend(self._check_capability(capability))
        for key, supported in (("dtype", self.dtypes), ("kv_cache_dtype", self.kv_cache_dtypes)):
            value = settings.get(key)
            if value is not None and supported and (name := dtype_name(value)) not in supported:
                reasons.append(f"{key} {name!r} not supported ({', '.join(supported)})")
        for key, sizes in (("head_size", self.head_sizes), ("block_size", self.block_sizes)):
            reasons += sizes.refuses(key, settings.get(key))
        for kind, wanted in (("MLA", self.mla), ("sparse", self.sparse)):
            value = settings.get(f"use_{kind.lower()}")  # use_mla, use_sparse
            if value not in (None, True, False):  # "False" from --set use_mla=False: not JSON
                reasons.append(f"use_{kind.lower()} must be true or false, not {value!r}")
            elif value is not None and bool(value) != wanted:
                reasons.append(f"{kind} attention only" if wanted else f"no {kind} attention")
        return reasons

    def _check_capability(self, cap: object) -> list[str]:
        cap = tuple(cap) if isinstance(cap, list) else cap  # [9, 0] as JSON gives it
        if not (isinstance(cap, tuple) and [type(p) for p in cap] == [int, int]):  # not a bool
            return [f"capability must be a (major, minor) pair of ints, not {cap!r}"]
        low, high = self.capability or ((0, 0), None)
        wrong = f"capability {_version(cap)} not supported ({self.capabilities})"
        return [] if low <= cap <= (high or cap) else [wrong]

    @property
    def capabilities(self) -> str:
        """The capability range as the tables say it: ``8.0 and above``, ``10.x``."""
        if self.capability is None:
            return "any"
        low, high = self.capability
        if high is None:
            return f"{_version(low)} and above"
        if low[1] == 0 and high[1] == MAX_MINOR:
            return ", ".join(f"{major}.x" for major in range(low[0], high[0] + 1))
        return f"{_version(low)} to {_version(high)}"


def _majors(first: int, last: int | None = None) -> tuple[Capability, Capability]:
    return (first, 0), (first if last is None else last, MAX_MINOR)


_10X, _9_10X, _SM80, _SM75_121 = _majors(10), _majors(9, 10), ((8, 0), None), ((7, 5), (12, 1))
_HALF, _BF16 = ("float16", "bfloat16"), ("bfloat16",)
_FULL, _KV = (*_HALF, "float32"), ("auto", "float16", "bfloat16")
_FP8 = (*_KV, "fp8", "fp8_e4m3")
_TRITON_KV, _AUTO_FP8 = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2"), ("auto", "fp8")
_FP8_ALL, _FLASHMLA_KV = (*_FP8, "fp8_e5m2"), ("auto", "bfloat16", "fp8", "fp8_e4m3")
_SPARSE_KV = ("auto", "bfloat16", "fp8_ds_mla", "fp8")
_BY_16, _FA_HEADS = Sizes(multiple=16), Sizes(multiple=8, high=256)
_HEADS_64_256, _XF_HEADS = Sizes((64, 128, 256)), Sizes(multiple=8, low=32, high=256)
_ROCM_HEADS = Sizes((32, 64, 80, 96, 128, 160, 192, 224, 256))
_TREE_HEADS = Sizes((32, 64, 96, 128, 160, 192, 224, 256))
_CPU_HEADS = Sizes((32, 64, 80, 96, 112, 128, 160, 192, 224, 256))
_V1 = "vllm/v1/attention/backends/"
_PREFILL = _V1 + "mla/prefill/"
_CUDA, _ROCM, _CUDA_XPU, _GPUS = ("cuda",), ("rocm",), ("cuda", "xpu"), ("cuda", "rocm", "xpu")


def _v1(file: str, *fields: Any, **flags: Any) -> Facts:  # noqa: ANN401 - Facts' own fields
    return Facts(_V1 + file, *fields, **flags)


def _mla(file: str, *fields: Any, blocks: Sizes = Sizes(), **flags: Any) -> Facts:  # noqa: ANN401
    # vLLM's MLA kernels take head size 576 (512 latent + 64 rope).
    return _v1("mla/" + file, *fields, Sizes((576,)), blocks, mla=True, **flags)


# Facts(source, devices, capability, dtypes, KV cache dtypes, head sizes, block sizes)
ATTENTION: dict[str, Facts] = {
    "FLASH_ATTN": _v1("flash_attn.py", _CUDA_XPU, _SM80, _HALF, _FP8, _FA_HEADS, _BY_16),
    "FLASH_SINK_ATTN": _v1("flash_sink_attn.py", _CUDA, _SM80, _HALF, _FP8, _FA_HEADS, _BY_16),
    "TRITON_ATTN": _v1("triton_attn.py", _GPUS, None, _FULL, _TRITON_KV, Sizes(low=32), _BY_16),
    "XFORMERS": _v1("xformers.py", _CUDA, None, _HALF, _KV, _XF_HEADS, _BY_16),
    "ROCM_ATTN": _v1("rocm_attn.py", _ROCM, None, _FULL, _TRITON_KV, _ROCM_HEADS, _BY_16),
    "ROCM_AITER_MLA": _mla("rocm_aiter_mla.py", _ROCM, None, _HALF, _AUTO_FP8, blocks=Sizes((1,))),
    "ROCM_AITER_FA": _v1("rocm_aiter_fa.py", _ROCM, None, _HALF, _TRITON_KV, _HEADS_64_256, _BY_16),
    "TORCH_SDPA": Facts(
        "attn's own (attn/backends/torch_sdpa.py): any device torch runs on", (), None, _FULL, ()
    ),
    "FLASHINFER": _v1(
        "flashinfer.py", _CUDA, _SM75_121, _HALF, _FP8_ALL, _HEADS_64_256, Sizes((16, 32, 64))
    ),
    "FLASHINFER_MLA": _mla("flashinfer_mla.py", _CUDA, _10X, _HALF, _FP8, blocks=Sizes((32, 64))),
    "TRITON_MLA": _mla("triton_mla.py", _GPUS, None, _HALF, _KV),
    "CUTLASS_MLA": _mla("cutlass_mla.py", _CUDA, _10X, _HALF, _FP8, blocks=Sizes((128,))),
    "FLASHMLA": _mla("flashmla.py", _CUDA, _9_10X, _HALF, _FLASHMLA_KV, blocks=Sizes((64,))),
    "FLASHMLA_SPARSE": _mla(
        "flashmla_sparse.py", _CUDA, _9_10X, _BF16, _SPARSE_KV, blocks=Sizes((64,)), sparse=True
    ),
    "FLASH_ATTN_MLA": _mla("flashattn_mla.py", _CUDA, _majors(9), _HALF, _KV, blocks=_BY_16),
    "PALLAS": _v1("pallas.py", ("tpu",), None, _BF16, (), Sizes(multiple=128)),
    "IPEX": _v1("ipex_attn.py", ("xpu", "cpu"), None, _FULL, ()),
    "NO_ATTENTION": Facts("vLLM's registry: for models without attention layers", (), None, (), ()),
    "FLEX_ATTENTION": _v1("flex_attention.py", ("cuda", "cpu"), None, _FULL, _KV, Sizes(), _BY_16),
    "TREE_ATTN": _v1("tree_attn.py", ("cuda", "rocm"), None, _HALF, _KV, _TREE_HEADS, _BY_16),
    "ROCM_AITER_UNIFIED_ATTN": _v1(
        "rocm_aiter_unified_attn.py", _ROCM, None, _HALF, _TRITON_KV, Sizes(low=32), _BY_16
    ),
    "CPU_ATTN": _v1("cpu_attn.py", ("cpu",), None, _FULL, ("auto",), _CPU_HEADS),
}


#: An MLA prefill kernel reads no paged KV cache: no cache or block limit.
MLA_PREFILL: dict[str, Facts] = {
    "FLASH_ATTN": Facts(_PREFILL + "flash_attn.py", _GPUS, _SM80, _HALF, (), mla=True),
    "FLASHINFER": Facts(_PREFILL + "flashinfer.py", _CUDA, _10X, _HALF, (), mla=True),
    "TRITON_RAGGED": Facts(_PREFILL + "trtllm_ragged.py", _CUDA, _10X, _HALF, (), mla=True),
    "TOKENSPEED_MLA": Facts(_PREFILL + "tokenspeed_mla.py", _CUDA, _10X, _HALF, (), mla=True),
    "ROCM_AITER_FA": Facts(_PREFILL + "aiter_flash_attn.py", _ROCM, None, _HALF, (), mla=True),
    "CPU": Facts(_PREFILL + "cpu_sdpa.py", ("cpu",), None, _FULL, (), mla=True),
    "ZEN_CPU": Facts(_PREFILL + "zen_cpu_sdpa.py", ("cpu",), None, _FULL, (), mla=True),
}


def _order(blackwell: str, other: str | None = None) -> Order:
    return tuple(blackwell.split()), tuple((other or blackwell).split())


#: vLLM's platform orders, per (device, use_mla); its TPU ignores use_mla.
_ATTENTION_ORDER: dict[tuple[str, bool], Order] = {
    ("cuda", False): _order(
        "FLASHINFER FLASH_ATTN TRITON_ATTN FLEX_ATTENTION",
        "FLASH_ATTN FLASHINFER TRITON_ATTN FLEX_ATTENTION",
    ),
    ("cuda", True): _order(
        "FLASHINFER_MLA CUTLASS_MLA FLASH_ATTN_MLA FLASHMLA TRITON_MLA FLASHMLA_SPARSE",
        "FLASH_ATTN_MLA FLASHMLA FLASHINFER_MLA TRITON_MLA FLASHMLA_SPARSE",
    ),
    ("rocm", False): _order("ROCM_ATTN ROCM_AITER_FA ROCM_AITER_UNIFIED_ATTN TRITON_ATTN"),
    ("rocm", True): _order("ROCM_AITER_MLA TRITON_MLA"),
    ("cpu", False): _order("CPU_ATTN"),
    ("tpu", False): _order("PALLAS"),
    ("tpu", True): _order("PALLAS"),
    ("xpu", False): _order("FLASH_ATTN TRITON_ATTN"),
    ("xpu", True): _order("TRITON_MLA"),
}

#: vLLM's MLA prefill selector, per device.
_MLA_PREFILL_ORDER: dict[str, Order] = {
    "cuda": _order("FLASH_ATTN TRITON_RAGGED FLASHINFER TOKENSPEED_MLA", "FLASH_ATTN"),
    "rocm": _order("ROCM_AITER_FA FLASH_ATTN"),
    "cpu": _order("ZEN_CPU CPU"),
    "xpu": _order("FLASH_ATTN"),
}


def priorities(registry: BackendEnumMeta, /, **settings: object) -> list[str]:
    """*registry*'s order for *settings* (no device: CUDA's; unknown: none), CUSTOM last if set."""
    device, capability = settings.get("device"), settings.get("capability")
    device = "cuda" if device is None else str(device)  # only None is no device: "" is unknown
    if registry is MLAPrefillBackendEnum:  # by device and capability only
        order = _MLA_PREFILL_ORDER.get(device, ((), ()))
    else:
        mla = settings.get("use_mla") in (True,)  # noqa: FURB171 - 1 and numpy's True too; "no" not
        order = _ATTENTION_ORDER.get((device, mla), ((), ()))
    major = capability[0] if isinstance(capability, (tuple, list)) and capability else None
    names = list(order[0] if major == _BLACKWELL else order[1])
    if "CUSTOM" in registry.__members__ and registry["CUSTOM"].is_overridden():
        names.append("CUSTOM")  # set: something is registered for it
    return names
