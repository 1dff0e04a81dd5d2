"""`attn doctor` in a virtualenv where a `.pth` file adds a folder of older copies."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest
from venvtools import PLUGIN_PARENTS, build_wheels, project_of_installed

pytestmark = pytest.mark.integration


def _older(project: Path, version: str, into: Path) -> Path:
    """A copy of *project* whose pyproject.toml says *version* instead."""
    copy = into / project.name
    shutil.copytree(project, copy)
    pyproject = copy / "pyproject.toml"
    lines = pyproject.read_text(encoding="utf-8").splitlines()
    (at,) = (i for i, line in enumerate(lines) if line.startswith("version = "))
    lines[at] = f'version = "{version}"'
    pyproject.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return copy


def test_older_copies_of_other_distributions_are_notes_and_of_a_plugin_a_problem(venv, tmp_path):
    """doctor exits 0 beside older copies of two non-plugins, and 1 once a plugin has one too."""
    # Two distributions that are no attn plugin (pytest, as installed from the package index,
    # and one shaped like triton) and one plugin, each as a wheel, and older releases of them.
    pytest_project = project_of_installed("pytest", tmp_path / "installed")
    triton = PLUGIN_PARENTS[1] / "triton-like"
    example = PLUGIN_PARENTS[0] / "attn-example-plugin"
    projects = [pytest_project, triton, example]
    older = [_older(p, "0.0.1", tmp_path / "older") for p in projects]
    current = build_wheels(projects, tmp_path / "wheels")
    old = build_wheels(older, tmp_path / "old-wheels")
    venv.pip("install", "-q", "--no-deps", "--no-index", "--no-compile", *current.values())
    # The older copies in a folder that a .pth file appends to sys.path, after site-packages.
    folder = tmp_path / "older-copies"
    paths = {"base": str(venv.root), "platbase": str(venv.root)}
    pth = Path(sysconfig.get_path("purelib", vars=paths)) / "older-copies.pth"
    install = ("install", "-q", "--no-deps", "--no-index", "--no-compile", "--target", folder)
    venv.pip(*install, old["pytest"], old["triton-like"])
    pth.write_text(f"{folder}\n", encoding="utf-8")
    try:
        healthy = venv.attn("doctor")
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
        for name in ("pytest", "triton-like"):
            assert f"note (non-plugin-copy): {name} is installed twice" in healthy.stdout
        assert "no backend comes from it" in healthy.stdout
        assert healthy.stdout.count("note (non-plugin-copy)") == 2  # once, not per registry

        venv.pip(*install, old["attn-example-plugin"])
        duplicated = venv.attn("doctor")
        assert duplicated.returncode == 1, duplicated.stdout + duplicated.stderr
        assert "problem (duplicate-metadata): attn-example-plugin is installed twice" in (
            duplicated.stdout
        )
    finally:
        pth.unlink()
