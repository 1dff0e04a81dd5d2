"""The suite runs isolated from the machine: only what a test writes is discovered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import distributions
from pathlib import Path

import pytest

#: What runs the suite: attn, pytest and their requirements (some only on old Pythons).
RUNNER = {"attn", "packaging", "pytest", "pluggy", "iniconfig"}
RUNNER_MAY_NEED = {"Pygments", "exceptiongroup", "tomli", "colorama", "typing_extensions"}

LIST = (
    "import json; from importlib.metadata import distributions as d; "
    "print(json.dumps(sorted(x.metadata['Name'] for x in d())))"
)


def names() -> set[str]:
    return {d.metadata["Name"] for d in distributions()}


def test_only_the_runner_is_installed():
    """A test sees attn and the test runner installed; no other tool of the suite, no plugin."""
    seen = names()
    assert seen >= RUNNER
    assert seen - RUNNER <= RUNNER_MAY_NEED
    assert {"jsonschema", "hatchling", "mypy", "ruff"} & seen == set()


def test_no_site_packages_of_the_environment_on_sys_path():
    """The only site-packages on sys.path is the session runtime's."""
    sites = [e for e in sys.path if "site-packages" in e or "dist-packages" in e]
    assert len(sites) == 1
    assert Path(sys.executable).parent.parent in Path(sites[0]).parents


def test_a_site_is_first_and_seen(site):
    """A site written by the test comes first on sys.path and its distribution is seen."""
    site.dist("plug")
    assert sys.path[0] == str(site.root)
    assert "plug" in names()


def test_subprocess_sees_what_the_test_sees(python, site):
    """The python fixture's subprocess sees the test's sites and the runner, nothing else."""
    site.dist("plug")
    done = python.run("-c", LIST)
    assert set(json.loads(done.stdout)) == names()
    assert "plug" in names()


def test_plain_subprocess_sees_the_runner_only():
    """A subprocess of sys.executable sees the runner, none of the environment's tools."""
    done = subprocess.run(
        [sys.executable, "-c", LIST], capture_output=True, text=True, check=True, timeout=60
    )
    assert set(json.loads(done.stdout)) == names()


def test_subprocess_imports_attn(python):
    """attn and packaging import in a subprocess."""
    done = python.run("-c", "import attn, packaging.version; print(attn.__version__)")
    assert done.stdout.strip() == sys.modules["attn"].__version__


@pytest.mark.parametrize("name", ["ATTN_PLUGINS", "ATTN_STRICT", "ATTN_SOMETHING_NEW"])
def test_attn_variables_are_cleared(name):
    """No ATTN_* variable of the caller's shell reaches a test."""
    assert name not in os.environ


def test_cache_and_terminal_are_the_tests_own(tmp_path):
    """The cache folder is inside the test's temporary folder; the terminal is 80 columns."""
    assert os.environ["XDG_CACHE_HOME"] == str(tmp_path / "xdg-cache")
    assert (os.environ["COLUMNS"], os.environ["LINES"]) == ("80", "24")
