"""The runnable examples in docs/ keep working: their asserts are the docs' claims."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "docs" / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_clean(python, example):
    """Each example exits 0 with warnings as errors, and finishes with its 'ok' line."""
    done = python.run("-W", "error", str(example), check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "ok"


def test_examples_exist():
    """The docs ship at least the toy host."""
    assert "toy_host.py" in [p.name for p in EXAMPLES]
