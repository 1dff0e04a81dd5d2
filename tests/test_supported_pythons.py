"""The Pythons attn claims are exactly the ones CI tests.

CI's list is ``PYTHONS`` in noxfile.py (read here without importing nox);
the claims are the package metadata users see (classifiers and
``Requires-Python``), pyproject.toml, and the README's sentence.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ci_pythons() -> tuple[str, ...]:
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "PYTHONS":
            assert isinstance(node, ast.Assign | ast.AnnAssign)
            assert node.value is not None
            return tuple(str(v) for v in ast.literal_eval(node.value))
    pytest.fail("noxfile.py defines no PYTHONS")


def _minor(version: str) -> int:
    major, minor = version.split(".")
    assert major == "3"
    return int(minor)


CI_PYTHONS = _ci_pythons()


def test_ci_pythons_are_a_contiguous_range() -> None:
    """CI tests every minor version from the oldest claimed one to the newest, none skipped."""
    minors = [_minor(v) for v in CI_PYTHONS]
    assert minors == list(range(minors[0], minors[-1] + 1))


def test_installed_classifiers_name_exactly_the_ci_pythons() -> None:
    """The wheel's classifiers claim the Pythons CI tests, no more and no fewer."""
    classifiers = metadata("attn").get_all("Classifier") or []
    claimed = [
        c.rsplit(" :: ", 1)[1]
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert claimed == list(CI_PYTHONS)


def test_installed_requires_python_starts_at_the_oldest_ci_python() -> None:
    """Requires-Python admits the oldest Python CI tests and nothing older."""
    assert metadata("attn")["Requires-Python"] == f">={CI_PYTHONS[0]}"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is new in Python 3.11")
def test_pyproject_claims_exactly_the_ci_pythons() -> None:
    """pyproject.toml, the source of the metadata, says the same (an editable install can lag)."""
    import tomllib  # noqa: PLC0415 - Python 3.11+

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == f">={CI_PYTHONS[0]}"
    versions = [
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert versions == list(CI_PYTHONS)


def test_readme_names_the_ci_pythons() -> None:
    """The README tells users the same range CI tests."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    expected = f"attn supports Python {', '.join(CI_PYTHONS[:-1])} and {CI_PYTHONS[-1]}"
    assert expected in " ".join(readme.split())
