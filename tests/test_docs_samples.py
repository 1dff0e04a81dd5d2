"""Sample output the docs show is what attn prints for the environment they describe."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import attn

ROOT = Path(__file__).resolve().parents[1]


def _plugin(site: Path, name: str, version: str, requires: str, entry_point: str) -> None:
    """An installed distribution: a dist-info folder declaring one attn.backends entry point."""
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir()
    metadata = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Dist: {requires}\n"
    )
    (folder / "METADATA").write_text(metadata, encoding="utf-8")
    (folder / "entry_points.txt").write_text(f"[attn.backends]\n{entry_point}\n", encoding="utf-8")
    (folder / "RECORD").write_text("", encoding="utf-8")


def _blocks_of(page: str, heading: str) -> list[str]:
    """The fenced blocks of the section *heading* of *page* (a path from the root), in order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    section = text[text.index(f"\n{heading}\n") + 1 :]
    end = section.find("\n## ")
    section = section if end == -1 else section[:end]
    return re.findall(r"^```\w*\n(.*?)^```", section, re.MULTILINE | re.DOTALL)


def test_the_cli_reference_shows_doctor_as_doctor_prints_it(tmp_path):
    """The doctor sample of docs/cli.md: an incompatible plugin and a case collision."""
    _plugin(tmp_path, "old-attn", "2.0", "attn>=99", "OLD_ATTN = old_attn:Old")
    _plugin(tmp_path, "lower-attn", "1.0", "attn>=0.1", "flash_attn = lower_attn:Flash")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
    env.update(PYTHONPATH=str(tmp_path), ATTN_NO_CACHE="1", COLUMNS="100")
    done = subprocess.run(
        [sys.executable, "-m", "attn", "doctor"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    # The page shows the whole output, then the lines about what doctor did not import again.
    printed = done.stdout.replace(attn.__version__, "0.1.0").splitlines()
    not_imported = [line for line in printed if line.startswith(("Not ", "Run "))]
    whole, not_imported_block = _blocks_of("docs/cli.md", "## `attn doctor`")[:2]
    assert whole.splitlines() == printed
    assert not_imported_block.splitlines() == not_imported


def test_the_readme_shows_select_as_it_prints_with_and_without_the_template_plugin(plugin_site):
    """The README's selection samples: the template plugin chosen on the CPU; none without it."""
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("the samples describe a machine without torch")
    site = plugin_site("plugins_example/attn-template-plugin")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
    env.update(ATTN_NO_CACHE="1")

    def select(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "attn", "select", "AttentionBackendEnum", "--set", "device=cpu"],
            env={**env, **extra},
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    with_plugin, without = _blocks_of("README.md", "## Choosing the backend")
    chosen, rejected = select(PYTHONPATH=str(site)), select()
    assert chosen.returncode == 0, chosen.stderr
    assert with_plugin.splitlines()[2:] == chosen.stdout.splitlines()
    assert rejected.returncode == 1
    assert without.splitlines() == (rejected.stdout + rejected.stderr).splitlines()
