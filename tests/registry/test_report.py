"""The report's Literal aliases: one set of values for the type checker and for run time."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

from attn.registry import report

ALIASES = ("Origin", "BackendStatus", "PluginStatus", "FindingKind")


def _static_aliases() -> dict[str, tuple[str, ...]]:
    """The values of each alias as the type checker reads them (the TYPE_CHECKING block)."""
    tree = ast.parse(Path(report.__file__).read_text(encoding="utf-8"))
    found: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            value = node.value
            if isinstance(value, ast.Subscript) and getattr(value.value, "id", "") == "Literal":
                items = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
                found[node.target.id] = tuple(ast.literal_eval(item) for item in items)
    return found


def test_the_type_checker_and_run_time_see_the_same_values():
    """Each alias the type checker sees has exactly the values run time uses."""
    static = _static_aliases()
    assert set(static) == set(ALIASES)
    for name in ALIASES:
        assert typing.get_args(getattr(report, name)) == static[name], name


@pytest.mark.parametrize("name", ALIASES)
def test_each_alias_is_a_literal_at_run_time(name):
    """``from attn.registry.report import FindingKind`` gives the Literal type."""
    alias = getattr(report, name)
    assert typing.get_origin(alias) is typing.Literal


def test_problem_kinds_are_every_kind_but_the_notes():
    """doctor fails on every kind of finding except the two notes."""
    kinds = set(typing.get_args(report.FindingKind))
    assert {"case-collision", "preferred"} == report.NOTE_KINDS
    assert kinds - report.PROBLEM_KINDS == report.NOTE_KINDS
    assert kinds > report.PROBLEM_KINDS


def test_unknown_attribute_is_an_attribute_error():
    """The lazy aliases do not hide a misspelt name."""
    with pytest.raises(AttributeError, match="FindingKinds"):
        report.FindingKinds  # noqa: B018 - the access is the test
