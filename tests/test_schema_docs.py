"""The JSON Schemas in docs/ are attn's own: each describes itself and names only its own files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = sorted((ROOT / "docs").glob("*.schema.json"))
#: A file a description points at: a path ending in .md or .json.
NAMED_FILE = re.compile(r"[\w./-]+\.(?:md|json)\b")


def _descriptions(node: object) -> list[str]:
    """Every ``description`` of a schema, its properties' and definitions' included."""
    if isinstance(node, dict):
        own = [node["description"]] if isinstance(node.get("description"), str) else []
        return own + [text for value in node.values() for text in _descriptions(value)]
    if isinstance(node, list):
        return [text for value in node for text in _descriptions(value)]
    return []


def test_docs_ship_the_schema_of_every_json_command():
    """list, doctor and select: one schema each, as the JSON reference and Selection say."""
    assert [p.name for p in SCHEMAS] == [
        "attn-doctor.schema.json",
        "attn-list.schema.json",
        "attn-select.schema.json",
    ]


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_the_schema_describes_its_own_command(path):
    """Its title is the command, and its description says what that command prints."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    command = path.name.removesuffix(".schema.json").replace("-", " ", 1)
    assert schema["title"] == f"{command} --json"
    assert schema["description"].startswith(f"The output of `{command} ")


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_the_schema_names_no_file_outside_the_repository(path):
    """Every file a description names is in the checkout (docs/json.md, not the design notes)."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    named = {name for text in _descriptions(schema) for name in NAMED_FILE.findall(text)}
    outside = [n for n in sorted(named) if ".." in n or not (ROOT / n).is_file()]
    assert outside == []
