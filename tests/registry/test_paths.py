"""Class paths: one canonical form, both forms accepted at the edges."""

from __future__ import annotations

import pytest

from attn.registry import InvalidPathError
from attn.registry.paths import ClassPath, parse_path


@pytest.mark.parametrize(
    ("text", "module", "qualname"),
    [
        ("pkg.mod:Cls", "pkg.mod", "Cls"),
        ("pkg.mod:Outer.Inner", "pkg.mod", "Outer.Inner"),
        ("pkg.mod.Cls", "pkg.mod", "Cls"),
        ("pkg.mod.Outer.Inner", "pkg.mod.Outer", "Inner"),
        ("mod:Cls", "mod", "Cls"),
        ("  pkg.mod : Cls ", "pkg.mod", "Cls"),
    ],
)
def test_parse_accepts_both_forms(text, module, qualname):
    """A colon splits module from qualname; a dotted path splits at its last dot."""
    assert parse_path(text) == ClassPath(module, qualname)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "Cls",
            (
                "Invalid class path: 'Cls': no module part; expected 'module:QualName' or "
                "'module.QualName'"
            ),
        ),
        ("a:b:c", "Invalid class path: 'a:b:c': more than one ':'; expected 'module:QualName'"),
        (
            "pkg..mod:Cls",
            "Invalid class path: 'pkg..mod:Cls': 'pkg..mod' is not a dotted module name",
        ),
        ("pkg.mod:", "Invalid class path: 'pkg.mod:': '' is not a dotted qualified name"),
        ("1pkg:Cls", "Invalid class path: '1pkg:Cls': '1pkg' is not a dotted module name"),
        (
            "pkg:f.<locals>.C",
            (
                "Invalid class path: 'pkg:f.<locals>.C': a class defined inside "
                "a function cannot be imported by path"
            ),
        ),
        (
            "",
            (
                "Invalid class path: '': no module part; expected 'module:QualName' or "
                "'module.QualName'"
            ),
        ),
    ],
)
def test_parse_refuses_malformed_paths(text, message):
    """A malformed path raises InvalidPathError, a ValueError, with the exact reason."""
    with pytest.raises(InvalidPathError) as info:
        parse_path(text)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)
    assert info.value.path == text


def test_parse_refuses_non_strings():
    """Only strings are paths."""
    with pytest.raises(InvalidPathError, match="expected a string, got int"):
        parse_path(42)


def test_forms_round_trip():
    """colon and dotted render the two forms; str() is the canonical colon form."""
    path = parse_path("pkg.mod:Outer.Inner")
    assert path.colon == "pkg.mod:Outer.Inner"
    assert path.dotted == "pkg.mod.Outer.Inner"
    assert str(path) == "pkg.mod:Outer.Inner"
    assert parse_path(path) is path
