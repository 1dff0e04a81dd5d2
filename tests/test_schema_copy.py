"""docs/attn-list.schema.json is the contract's schema, unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "attn-list.schema.json"
COPY = ROOT / "docs" / "attn-list.schema.json"


def test_copy_is_a_valid_schema():
    """The shipped copy is a JSON Schema that its own meta-schema accepts."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(COPY.read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema).check_schema(schema)


@pytest.mark.skipif(not SHARED.is_file(), reason="the contract's schema is not beside the checkout")
def test_copy_matches_the_contract():
    """The copy in docs/ says exactly what the contract's schema says."""
    assert json.loads(COPY.read_text(encoding="utf-8")) == json.loads(
        SHARED.read_text(encoding="utf-8")
    )
