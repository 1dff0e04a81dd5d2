"""The kernels' facts: the classes check them, the docs show them; the orders follow vLLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from attn import AttentionBackendEnum, MLAPrefillBackendEnum, register_backend
from attn.backends._facts import ATTENTION, MLA_PREFILL, Facts, Sizes

DOCS = Path(__file__).resolve().parents[2] / "docs" / "selection.md"
TABLES = [(AttentionBackendEnum, ATTENTION), (MLAPrefillBackendEnum, MLA_PREFILL)]

HEADER = (
    "| backend | devices | capabilities | dtypes | head sizes | other limits | source |\n"
    "| --- | --- | --- | --- | --- | --- | --- |\n"
)


def row(name: str, facts: Facts) -> str:
    """One table row, as docs/selection.md writes it."""
    limits = []
    if facts.kv_cache_dtypes:
        limits.append(f"KV cache {', '.join(facts.kv_cache_dtypes)}")
    if facts.block_sizes != Sizes():
        limits.append(f"block size {facts.block_sizes}")
    limits += [kind for kind, flag in (("MLA", facts.mla), ("sparse", facts.sparse)) if flag]
    cells = [
        f"`{name}`",
        ", ".join(facts.devices) or "any",
        facts.capabilities,
        ", ".join(facts.dtypes) or "any",
        str(facts.head_sizes),
        "; ".join(limits) or "none",
        f"`{facts.source}`" if facts.source.startswith("vllm/") else facts.source,
    ]
    return "| " + " | ".join(cells) + " |\n"


def render(table: dict[str, Facts]) -> str:
    return HEADER + "".join(row(name, facts) for name, facts in table.items())


@pytest.mark.parametrize(("registry", "table"), TABLES)
def test_the_docs_show_the_facts(registry, table):
    """docs/selection.md holds each registry's table exactly as the data says."""
    expected = render(table)
    assert expected in DOCS.read_text(encoding="utf-8"), f"docs/selection.md needs:\n{expected}"


@pytest.mark.parametrize(("registry", "table"), TABLES)
def test_every_builtin_class_checks_its_own_row(registry, table):
    """Each member but CUSTOM has a row, its class reads that row, and no row is left over."""
    members = [m for m in registry if m.name != "CUSTOM"]
    assert [m.name for m in members] == list(table)
    for member in members:
        cls = member.get_class()
        assert cls.facts_key == member.name
        assert cls.validate_configuration() == []
        assert cls.validate_configuration(device="nowhere") == table[member.name].check(
            {"device": "nowhere"}
        )


def test_flash_attention_checks_each_fact():
    """FlashAttention: CUDA 8.0 or more, fp16/bf16, head size a multiple of 8 up to 256."""
    check = AttentionBackendEnum.FLASH_ATTN.get_class().validate_configuration
    good = {"device": "cuda", "capability": (8, 0), "dtype": "bfloat16", "head_size": 128}
    assert check(**good, block_size=32, kv_cache_dtype="fp8", use_mla=False) == []
    assert check(**{**good, "capability": (7, 5)}) == [
        "capability 7.5 not supported (8.0 and above)"
    ]
    assert check(**{**good, "dtype": "float32"}) == [
        "dtype 'float32' not supported (float16, bfloat16)"
    ]
    assert check(**{**good, "head_size": 260}) == [
        "head_size 260 not supported (multiple of 8 up to 256)"
    ]
    assert check(**{**good, "head_size": 100}) != []
    assert check(block_size=8) == ["block_size 8 not supported (multiple of 16)"]
    assert check(kv_cache_dtype="fp8_e5m2") == [
        "kv_cache_dtype 'fp8_e5m2' not supported (auto, float16, bfloat16, fp8, fp8_e4m3)"
    ]
    assert check(use_mla=True) == ["no MLA attention"]
    assert check(device="rocm") == ["runs on cuda or xpu, not 'rocm'"]


def test_a_size_of_zero_or_less_is_refused_as_not_positive():
    """A kernel that takes any size still takes no empty or negative one, and says so."""
    for name in ("NO_ATTENTION", "TORCH_SDPA", "FLASH_ATTN"):
        check = AttentionBackendEnum[name].get_class().validate_configuration
        assert check(head_size=0, block_size=-16) == [
            "head_size 0 not supported (sizes are positive)",
            "block_size -16 not supported (sizes are positive)",
        ]
        assert check(head_size=64, block_size=16) == []


class IntLike:
    """A numpy integer, as far as the checks can tell: an int by __index__ only."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"IntLike({self.value})"


def test_a_size_or_flag_of_the_wrong_type_is_a_reason_not_a_pass():
    """A float or text size is refused by name; an integer type is checked; use_mla is a bool."""
    check = AttentionBackendEnum.FLASH_ATTN.get_class().validate_configuration
    assert check(head_size=100.0, block_size="16") == [
        "head_size must be an int, not 100.0",
        "block_size must be an int, not '16'",
    ]
    assert check(head_size=IntLike(100)) == [
        "head_size IntLike(100) not supported (multiple of 8 up to 256)"
    ]
    assert check(head_size=IntLike(128)) == check(use_mla=0) == []
    assert check(use_mla="False") == ["use_mla must be true or false, not 'False'"]
    any_size = AttentionBackendEnum.TORCH_SDPA.get_class().validate_configuration
    assert any_size(head_size=True, block_size=False) == [  # a bool is no size, though an int
        "head_size must be an int, not True",
        "block_size must be an int, not False",
    ]
    # A kernel for any capability refuses a malformed one too, as every kernel does a size.
    triton = AttentionBackendEnum.TRITON_ATTN.get_class().validate_configuration
    assert triton(capability=9.0) == ["capability must be a (major, minor) pair of ints, not 9.0"]
    assert triton(capability=(9, 0)) == triton(capability=[12, 1]) == []
    flash = AttentionBackendEnum.FLASH_ATTN.get_class().validate_configuration
    for cap in ((9, True), (True, 0), [10, False]):  # a bool is no major or minor, as no size
        assert flash(capability=cap) == [
            f"capability must be a (major, minor) pair of ints, not {tuple(cap)!r}"
        ]


class TorchLike:
    def __str__(self) -> str:
        return "torch.float32"


def test_settings_the_facts_do_not_know_are_ignored():
    """Unknown settings pass; a torch dtype is read by its name; capability only on CUDA."""
    check = AttentionBackendEnum.CUTLASS_MLA.get_class().validate_configuration
    assert check(use_mla=True, num_heads=128, sliding_window=None) == []
    assert check(dtype=TorchLike()) == ["dtype 'float32' not supported (float16, bfloat16)"]
    assert check(capability=(9, 0)) == ["capability 9.0 not supported (10.x)"]
    assert check(capability=(10, 9)) == check(capability=(10, 0)) == []  # 10.x: every minor
    assert check(capability=(9, 0), device="xpu") == ["runs on cuda, not 'xpu'"]
    assert check(capability="9.0") == [
        "capability must be a (major, minor) pair of ints, not '9.0'"
    ]
    assert check(use_mla=False) == ["MLA attention only"]


def test_sparse_and_mla_prefill_facts():
    """FLASHMLA_SPARSE is sparse MLA only; the CPU prefill kernels run on the CPU only."""
    sparse = AttentionBackendEnum.FLASHMLA_SPARSE.get_class().validate_configuration
    assert sparse(use_mla=True, use_sparse=False) == ["sparse attention only"]
    assert sparse(use_mla=True, use_sparse=True, dtype="bfloat16", block_size=64) == []
    cpu = MLAPrefillBackendEnum.CPU.get_class().validate_configuration
    assert cpu(device="cpu", dtype="float32") == []
    assert cpu(device="cuda") == ["runs on cpu, not 'cuda'"]


@pytest.mark.parametrize(
    ("sizes", "text", "accepted", "refused"),
    [
        (Sizes(), "any", [1, 7, 4096], []),
        (Sizes((64, 128)), "64, 128", [64, 128], [96]),
        (Sizes(multiple=8, high=256), "multiple of 8 up to 256", [8, 256], [4, 12, 264]),
        (Sizes(low=32), "at least 32", [32, 33], [31]),
    ],
)
def test_sizes(sizes, text, accepted, refused):
    """A size rule says itself as the tables do, and accepts what it says."""
    assert str(sizes) == text
    assert [sizes.accepts(n) for n in accepted + refused] == [True] * len(accepted) + [False] * len(
        refused
    )


@pytest.mark.parametrize(
    ("settings", "order"),
    [
        (
            {"device": "cuda", "capability": (9, 0)},
            ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION"],
        ),
        ({}, ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION"]),
        (
            {"device": "cuda", "capability": (10, 0)},
            ["FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION"],
        ),
        (
            {"device": "cuda", "capability": (10, 3), "use_mla": True},
            [
                "FLASHINFER_MLA",
                "CUTLASS_MLA",
                "FLASH_ATTN_MLA",
                "FLASHMLA",
                "TRITON_MLA",
                "FLASHMLA_SPARSE",
            ],
        ),
        (
            {"device": "cuda", "capability": (8, 6), "use_mla": True},
            ["FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", "FLASHMLA_SPARSE"],
        ),
        (
            {"device": "rocm"},
            ["ROCM_ATTN", "ROCM_AITER_FA", "ROCM_AITER_UNIFIED_ATTN", "TRITON_ATTN"],
        ),
        ({"device": "rocm", "use_mla": True}, ["ROCM_AITER_MLA", "TRITON_MLA"]),
        ({"device": "cpu"}, ["CPU_ATTN"]),
        ({"device": "cpu", "use_mla": True}, []),
        ({"device": "tpu"}, ["PALLAS"]),
        ({"device": "tpu", "use_mla": True}, ["PALLAS"]),
        ({"device": "xpu"}, ["FLASH_ATTN", "TRITON_ATTN"]),
        ({"device": "xpu", "use_mla": True}, ["TRITON_MLA"]),
        ({"device": "abacus"}, []),
        ({"device": ""}, []),  # an unknown device, not CUDA's: only None is no device
        ({"device": 0}, []),
        (
            {"device": "cuda", "use_mla": 1},
            ["FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", "FLASHMLA_SPARSE"],
        ),
        # Not true or false (`--set use_mla=False`): the built-ins' reasons name the setting.
        ({"device": "cpu", "use_mla": "False"}, ["CPU_ATTN"]),
        ({"device": "xpu", "use_mla": "yes"}, ["FLASH_ATTN", "TRITON_ATTN"]),
    ],
)
def test_attention_priorities_follow_vllm(settings, order):
    """vLLM's order per device, capability and use_mla, restricted to attn's members."""
    assert AttentionBackendEnum.priorities(**settings) == order


@pytest.mark.parametrize(
    ("settings", "order"),
    [
        (
            {"device": "cuda", "capability": (10, 0)},
            ["FLASH_ATTN", "TRITON_RAGGED", "FLASHINFER", "TOKENSPEED_MLA"],
        ),
        ({"device": "cuda", "capability": (9, 0)}, ["FLASH_ATTN"]),
        ({"device": "rocm"}, ["ROCM_AITER_FA", "FLASH_ATTN"]),
        ({"device": "cpu"}, ["ZEN_CPU", "CPU"]),
        ({"device": "xpu"}, ["FLASH_ATTN"]),
        ({"device": "tpu"}, []),
    ],
)
def test_mla_prefill_priorities_follow_vllm(settings, order):
    """vLLM's MLA prefill selector's lists, restricted to attn's members."""
    assert MLAPrefillBackendEnum.priorities(**settings) == order


@pytest.mark.parametrize("registry", [AttentionBackendEnum, MLAPrefillBackendEnum])
def test_a_capability_given_as_a_list_is_the_pair(registry):
    """capability=[10, 0], as JSON and YAML configurations give it, orders as (10, 0) does."""
    assert registry.priorities(device="cuda", capability=[10, 0]) == registry.priorities(
        device="cuda", capability=(10, 0)
    )
    assert registry.FLASH_ATTN.get_class().validate_configuration(capability=[7, 0]) == (
        registry.FLASH_ATTN.get_class().validate_configuration(capability=(7, 0))
    )


def test_a_registered_custom_comes_last(plugin_module):
    """CUSTOM joins the order, last, once something is registered for it."""
    assert "CUSTOM" not in AttentionBackendEnum.priorities(device="cpu")
    register_backend(AttentionBackendEnum.CUSTOM, "plug.mod:Backend")
    assert AttentionBackendEnum.priorities(device="cpu") == ["CPU_ATTN", "CUSTOM"]
