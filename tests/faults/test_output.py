"""What plugins cannot do to attn's output: pad the table, or write into the JSON."""

from __future__ import annotations

import json

from harness import cli

GROUP = "attn.backends"
BACKEND = "from attn import AttentionBackend\n\n\nclass B(AttentionBackend):\n    pass\n"


def test_a_very_long_name_widens_only_its_own_row(site):
    """A 10,000-character backend name is printed whole, on its own line; other rows stay narrow."""
    long = "A" * 10_000
    site.module("long_mod", BACKEND)
    site.dist("long", entry_points={GROUP: {long: "long_mod:B"}})
    listing = cli("list", "attn.backends")
    assert listing.code == 0
    lines = listing.out.splitlines()
    assert long in lines
    assert max(len(line) for line in lines if line != long) <= 100


def test_plugin_prints_at_import_go_to_stderr(site):
    """attn list --load --json holds the JSON only; what the plugin printed is on stderr."""
    site.module("loud_mod", "print('hello from the plugin')\n" + BACKEND)
    site.dist("loud", entry_points={GROUP: {"LOUD": "loud_mod:B"}})
    loaded = cli("list", "--load", "--json")
    assert loaded.code == 0
    payload = json.loads(loaded.out)
    assert payload["registries"][0]["registry"] == "AttentionBackendEnum"
    assert "hello from the plugin" in loaded.err
