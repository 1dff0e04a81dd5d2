"""`attn doctor` and `attn show` against plugins installed into a real venv."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from venvtools import PLUGIN_PARENTS, build_wheels, registry

pytestmark = pytest.mark.integration


def output(result):
    return result.stdout + result.stderr


def test_doctor_flags_typo_group_and_undeclared_requirement(venv):
    """`attn doctor` exits 1 naming the misspelt group `attn.backend` and a plugin lacking attn."""
    venv.install("attn-typo-group", "attn-norequire-plugin")
    result = venv.attn("doctor")
    assert result.returncode == 1, output(result)
    text = output(result)
    # The misspelt group itself, not just a mention of the real `attn.backends`.
    assert re.search(r"attn\.backend(?!s)", text), text
    assert "attn-typo-group" in text
    assert "attn-norequire-plugin" in text

    # A plugin without a requirement on attn is still merged; the misspelt group is not read.
    data = venv.list_json()
    names = {
        row["name"] for entry in data["registries"] for row in entry["backends"] + entry["plugins"]
    }
    assert "NOREQ_ATTN" in names
    assert "TYPO_ATTN" not in names


def test_doctor_passes_clean_venv(venv):
    """`attn doctor` exits 0 with only attn, and with attn-example-plugin installed."""
    result = venv.attn("doctor")
    assert result.returncode == 0, output(result)
    venv.install("attn-example-plugin")
    result = venv.attn("doctor")
    assert result.returncode == 0, output(result)
    result = venv.attn("doctor", "--load")
    assert result.returncode == 0, output(result)


def test_doctor_passes_beside_another_projects_groups(venv):
    """With a triton-like distribution (entry points in `triton.backends`), doctor exits 0."""
    venv.install("triton-like")
    result = venv.attn("doctor")
    assert result.returncode == 0, output(result)
    assert "triton" not in output(result)
    assert result.stdout.endswith(
        "attn doctor: no problems found (2 groups, 0 plugin entry points).\n"
    )


def test_doctor_flags_unmatched_attn_plugins_name(venv):
    """`attn doctor` exits 1 when ATTN_PLUGINS names a distribution that is not installed."""
    venv.install("attn-example-plugin")
    result = venv.attn("doctor", env={"ATTN_PLUGINS": "attn-example-plugin,attn-no-such-plugin"})
    assert result.returncode == 1, output(result)
    assert "attn-no-such-plugin" in output(result)


def test_distribution_found_twice_counts_once(venv, tmp_path):
    """A plugin installed twice on sys.path counts once, the first copy wins; doctor flags it."""
    venv.install("attn-example-plugin")
    # A second copy, 0.2.0, in a folder put on sys.path before site-packages.
    project = tmp_path / "attn-example-plugin"
    shutil.copytree(PLUGIN_PARENTS[0] / "attn-example-plugin", project)
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(text.replace('version = "0.1.0"', 'version = "0.2.0"'), encoding="utf-8")
    wheel = build_wheels([project], tmp_path / "wheels")["attn-example-plugin"]
    target = tmp_path / "target"
    venv.pip("install", "-q", "--no-deps", "--no-index", "--no-compile", "--target", target, wheel)
    env = {"PYTHONPATH": str(target)}

    listing = venv.attn("list", "--json", "attn.backends", env=env)
    assert listing.returncode == 0, output(listing)
    # One distribution, so no conflict between its two copies.
    assert "ATTN_PLUGINS" not in listing.stderr
    data = json.loads(listing.stdout)
    venv.validate(data)
    plugins = registry(data, "AttentionBackendEnum")["plugins"]
    assert sorted((row["name"], row["distribution_version"], row["status"]) for row in plugins) == [
        ("EXAMPLE_ATTN", "0.2.0", "used"),
        ("FLASH_ATTN", "0.2.0", "used"),
    ]

    result = venv.attn("doctor", env=env)
    assert result.returncode == 1, output(result)
    assert "attn-example-plugin" in output(result)


def test_doctor_flags_plugin_problems(venv):
    """`attn doctor` exits 1 naming incompatible, shadowed, invalid and (--load) broken plugins."""
    venv.install(
        "attn-incompatible-plugin",
        "attn-conflict-a",
        "attn-conflict-b",
        "attn-invalid-plugin",
        "attn-broken-plugin",
    )
    result = venv.attn("doctor")
    assert result.returncode == 1, output(result)
    text = output(result)
    for culprit in ("attn-incompatible-plugin", "attn-conflict-b", "attn-invalid-plugin"):
        assert culprit in text

    result = venv.attn("doctor", "--load")
    assert result.returncode == 1, output(result)
    assert "BROKEN_ATTN" in output(result)


def test_doctor_passes_broken_plugin_without_load(venv):
    """`attn doctor` finds a plugin failing at import only with --load."""
    venv.install("attn-broken-plugin")
    result = venv.attn("doctor")
    assert result.returncode == 0, output(result)
    result = venv.attn("doctor", "--load")
    assert result.returncode == 1, output(result)
    assert "BROKEN_ATTN" in output(result)


def test_show_lists_every_claimant(venv):
    """`attn show NAME` exits 0 naming every claimant of NAME, and 1 for an unknown name."""
    venv.install("attn-conflict-a", "attn-conflict-b")
    result = venv.attn("show", "SHARED_ATTN")
    assert result.returncode == 0, output(result)
    for claimant in ("attn-conflict-a", "attn-conflict-b"):
        assert claimant in result.stdout

    result = venv.attn("show", "NO_SUCH_BACKEND")
    assert result.returncode == 1, output(result)


def test_show_covers_every_registry_with_the_name(venv):
    """`attn show FLASH_ATTN` shows both registries unless --registry picks one."""
    result = venv.attn("show", "FLASH_ATTN")
    assert result.returncode == 0, output(result)
    assert "AttentionBackendEnum" in result.stdout
    assert "MLAPrefillBackendEnum" in result.stdout

    result = venv.attn("show", "FLASH_ATTN", "--registry", "MLAPrefillBackendEnum")
    assert result.returncode == 0, output(result)
    assert "MLAPrefillBackendEnum" in result.stdout
    assert "AttentionBackendEnum" not in result.stdout.replace("MLAPrefillBackendEnum", "")


def test_show_names_plugin_and_builtin_default(venv):
    """`attn show FLASH_ATTN` with attn-example-plugin names the plugin's class and the built-in."""
    venv.install("attn-example-plugin")
    result = venv.attn("show", "FLASH_ATTN", "--registry", "AttentionBackendEnum")
    assert result.returncode == 0, output(result)
    assert "attn-example-plugin" in result.stdout
    assert "ExampleFlashAttentionBackend" in result.stdout


def test_show_unknown_option_is_usage_error(venv):
    """`attn show` without a name exits 2."""
    result = venv.attn("show")
    assert result.returncode == 2, output(result)
