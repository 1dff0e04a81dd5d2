"""The template backend: conformance with attn's interface, the numbers, and discovery.

attn's testing kit is enabled in pyproject.toml (``addopts = ["-p", "attn.testing"]``).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from attn_template_plugin.backend import TemplateAttentionBackend
from attn_template_plugin.impl import TemplateAttentionImpl

from attn import AttentionBackendEnum, SelectionError
from attn.testing import BackendConformance

DISTRIBUTION = "attn-template-plugin"
ENTRY_POINT = "attn_template_plugin.backend:TemplateAttentionBackend"


class TestTemplateAttentionBackend(BackendConformance):
    """attn's checks of a backend class, one test each."""

    backend_class = ENTRY_POINT
    registry = AttentionBackendEnum


def test_one_query_against_two_keys():
    """Softmax of the scaled scores weighs the values (worked by hand)."""
    impl = TemplateAttentionImpl(scale=1.0)
    out = impl.forward([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]])
    high, low = math.e / (math.e + 1), 1 / (math.e + 1)  # softmax([1, 0])
    assert out == [[pytest.approx(high * 1 + low * 3), pytest.approx(high * 2 + low * 4)]]


def test_default_scale_is_one_over_sqrt_head_size():
    """Without a scale, scores are divided by sqrt(head_size)."""
    query, key, value = [[2.0, 2.0]], [[1.0, 1.0], [0.0, 0.0]], [[1.0], [0.0]]
    weight = 1 / (1 + math.exp(-4 / math.sqrt(2)))  # softmax([4/sqrt(2), 0])[0]
    assert TemplateAttentionImpl().forward(query, key, value) == [[pytest.approx(weight)]]


def test_causal_query_sees_only_earlier_keys():
    """With causal=True the first query attends to the first key only."""
    impl = TemplateAttentionImpl(scale=1.0, causal=True)
    out = impl.forward([[1.0], [1.0]], [[5.0], [5.0]], [[10.0], [20.0]])
    assert out == [[10.0], [15.0]]


def test_leading_dimensions_are_kept():
    """[batch, heads, seq, head_size] in, the same leading dimensions out."""
    matrix = [[1.0, 0.0], [0.0, 1.0]]
    out = TemplateAttentionImpl(scale=0.0).forward([[matrix]] * 2, [[matrix]] * 2, [[matrix]] * 2)
    assert out == [[[[0.5, 0.5], [0.5, 0.5]]]] * 2


def test_it_runs_on_the_cpu_only():
    """validate_configuration accepts the CPU, refuses other devices and MLA, ignores the rest."""
    check = TemplateAttentionBackend.validate_configuration
    assert check(device="cpu", head_size=64, dtype="float32", block_size=16) == []
    assert check() == []
    assert check(device="cuda", use_mla=True) == [
        "runs on the CPU only, not 'cuda'",
        "no multi-head latent attention (MLA)",
    ]
    assert check(use_mla=False) == []
    assert check(use_mla="False") == ["use_mla must be true or false, not 'False'"]  # not JSON


def test_selection_accepts_it_on_the_cpu_and_refuses_it_elsewhere(attn_plugins):
    """Chosen by name, attn's selection takes it on the CPU and says why not on a GPU."""
    attn_plugins.add(DISTRIBUTION, {"attn.backends": {"TEMPLATE_ATTN": ENTRY_POINT}})
    chosen = AttentionBackendEnum.select("TEMPLATE_ATTN", device="cpu")
    assert chosen.backend_class is TemplateAttentionBackend
    with pytest.raises(SelectionError, match="runs on the CPU only, not 'cuda'"):
        AttentionBackendEnum.select("TEMPLATE_ATTN", device="cuda")


def test_attn_finds_the_installed_plugin(attn_plugins, monkeypatch):
    """Installed with pip, the entry point makes TEMPLATE_ATTN a backend of attn."""
    # Only this distribution of the installed plugins: another installed pair
    # that conflicts (or an incompatible one) cannot fail this plugin's tests.
    monkeypatch.setenv("ATTN_PLUGINS", DISTRIBUTION)
    attn_plugins.include_installed = True
    backend = AttentionBackendEnum.lookup("TEMPLATE_ATTN")
    assert backend.get_path() == "attn_template_plugin.backend.TemplateAttentionBackend"
    assert backend.get_class() is TemplateAttentionBackend


def test_fake_plugin_overrides_a_builtin(attn_plugins):
    """Under another distribution, the same class can replace the built-in CPU_ATTN."""
    attn_plugins.add("vendor-cpu", {"attn.backends": {"CPU_ATTN": ENTRY_POINT}})
    assert AttentionBackendEnum.CPU_ATTN.is_overridden()
    assert AttentionBackendEnum.CPU_ATTN.get_class() is TemplateAttentionBackend


def test_attn_doctor_finds_no_problem(attn_plugins, monkeypatch):
    """`attn doctor --load --json` in a subprocess imports the plugin and finds nothing wrong."""
    monkeypatch.setenv("ATTN_PLUGINS", DISTRIBUTION)  # doctor checks this plugin only
    attn_plugins.include_installed = True
    done = subprocess.run(
        [sys.executable, "-m", "attn", "doctor", "--load", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads(done.stdout)
    assert (done.returncode, report["problems"]) == (0, 0)
    # Notes about other installed plugins (a case collision of theirs) are not this plugin's.
    assert [f for f in report["findings"] if DISTRIBUTION in f["message"]] == []
