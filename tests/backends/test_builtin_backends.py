"""Built-in backend classes: real, importable without their kernels, honest about availability."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from attn import AttentionBackend, AttentionBackendEnum, MLAPrefillBackendEnum
from attn.registry import build_report

KERNEL_MODULES = (
    "flash_attn",
    "flashinfer",
    "triton",
    "xformers",
    "torch",
    "aiter",
    "cutlass",
    "flash_mla",
    "torch_xla",
    "intel_extension_for_pytorch",
    "tokenspeed_mla",
    "zentorch",
)


def test_builtins_import_and_report_missing_kernels_without_them(python):
    """With every kernel library blocked, each built-in imports and lists itself unavailable."""
    script = textwrap.dedent(
        f"""
        import json, sys
        for name in {KERNEL_MODULES!r}:
            sys.modules[name] = None  # importing it now raises ImportError
        import attn
        out = {{}}
        for registry in (attn.AttentionBackendEnum, attn.MLAPrefillBackendEnum):
            for member in registry:
                if member.name == "CUSTOM":
                    continue
                cls = member.get_class()
                out[registry.__name__ + "." + member.name] = [
                    cls.is_available(), list(cls.requires), list(cls.missing_requirements())
                ]
        print(json.dumps(out))
        """
    )
    done = python.run("-c", script)
    result = json.loads(done.stdout)
    assert result["AttentionBackendEnum.FLASH_ATTN"] == [False, ["flash-attn"], ["flash-attn"]]
    assert result["AttentionBackendEnum.FLASHINFER"] == [
        False,
        ["flashinfer-python"],
        ["flashinfer-python"],
    ]
    assert result["AttentionBackendEnum.TORCH_SDPA"] == [False, ["torch"], ["torch"]]
    assert result["AttentionBackendEnum.NO_ATTENTION"] == [True, [], []]
    assert result["MLAPrefillBackendEnum.ZEN_CPU"] == [False, ["zentorch"], ["zentorch"]]
    for key, (available, requires, missing) in result.items():
        if requires:
            assert not available, key
            assert missing == requires, key


@pytest.mark.parametrize("registry", [AttentionBackendEnum, MLAPrefillBackendEnum])
def test_every_builtin_names_its_kernel_package(registry):
    """Every built-in but NO_ATTENTION and CUSTOM says which package its kernel needs."""
    for member in registry:
        if member.name in {"CUSTOM", "NO_ATTENTION"}:
            continue
        assert member.get_class().requires, member.name


def test_availability_is_checked_without_importing_the_kernel(site):
    """An installed kernel package counts as available and is not imported by the check."""
    site.module("flash_attn", "raise RuntimeError('the kernel must not be imported')\n")
    cls = AttentionBackendEnum.FLASH_ATTN.get_class()
    assert cls.is_available()
    assert cls.missing_requirements() == ()
    assert "flash_attn" not in sys.modules


def test_requires_modules_maps_distribution_to_import_name(site):
    """flashinfer-python is found under its import name, flashinfer."""
    site.module("flashinfer", "raise RuntimeError('the kernel must not be imported')\n")
    assert AttentionBackendEnum.FLASHINFER.get_class().is_available()
    assert "flashinfer" not in sys.modules


class NeedsNothing(AttentionBackend):
    pass


class NeedsMissing(AttentionBackend):
    requires = ("attn-surely-missing-kernel",)


def test_subclass_availability():
    """A subclass needing nothing is available; one needing a missing package is not."""
    assert NeedsNothing.is_available()
    assert not NeedsMissing.is_available()
    assert NeedsMissing.missing_requirements() == ("attn-surely-missing-kernel",)


def test_listing_reports_availability_and_requirements(site):
    """Listing rows carry available and requires for built-ins."""
    site.module("xformers", "")
    rows = {row.name: row for row in build_report(AttentionBackendEnum).backends}
    assert rows["XFORMERS"].available is True
    assert rows["XFORMERS"].requires == ("xformers",)
    assert rows["NO_ATTENTION"].available is True
    assert rows["NO_ATTENTION"].requires == ()
    assert rows["CUSTOM"].available is None
    assert rows["CUSTOM"].requires == ()


def test_base_class_defaults():
    """A backend that defines nothing more is valid: it loads and its hooks are explicit."""
    assert NeedsNothing.get_name() == "NeedsNothing"
    assert NeedsNothing.supports_head_size(128)
    assert NeedsNothing.get_kv_cache_shape(4, 16, 8, 64) == (2, 4, 16, 8, 64)
    with pytest.raises(NotImplementedError, match="override get_impl_cls"):
        NeedsNothing.get_impl_cls()


def test_torch_sdpa_implementation_imports_torch_only_when_run(python):
    """TORCH_SDPA hands out its implementation without torch; running it needs torch."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None
        import attn
        impl = attn.AttentionBackendEnum.TORCH_SDPA.get_class().get_impl_cls()(causal=True)
        try:
            impl.forward(None, None, None)
        except ImportError as exc:
            print(type(impl).__name__, "needs torch:", "torch" in str(exc))
        """
    )
    done = python.run("-c", script)
    assert done.stdout.strip() == "TorchSDPAImpl needs torch: True"


def test_torch_sdpa_computes_attention(environment):
    """With torch installed, TorchSDPAImpl matches softmax(QK^T/sqrt(d))V (seeded inputs)."""
    environment.require("torch")
    script = textwrap.dedent(
        """
        import torch
        import attn
        generator = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(1, 2, 5, 8, generator=generator) for _ in range(3))
        impl = attn.AttentionBackendEnum.TORCH_SDPA.get_class().get_impl_cls()()
        expected = torch.softmax(q @ k.transpose(-1, -2) / 8**0.5, dim=-1) @ v
        print(torch.allclose(impl.forward(q, k, v), expected, atol=1e-5))
        """
    )
    # The built-in TORCH_SDPA, whatever plugins the environment holds.
    done = environment.run("-c", script, env={"ATTN_DISABLE_PLUGINS": "1"})
    assert done.stdout == "True\n"
