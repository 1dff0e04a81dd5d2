"""Fixtures for the registry core's tests: a one-call discovery."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

import attn
from attn.registry.controls import read_controls
from attn.registry.discovery import DiscoveryResult, discover, scan_host

Discover = Callable[..., DiscoveryResult]


@pytest.fixture
def run_discovery() -> Discover:
    """Run the discovery pipeline over ``sys.path`` as attn's registries do."""

    def run(
        environ: Mapping[str, str] | None = None, group: str = "attn.backends"
    ) -> DiscoveryResult:
        registry = (
            attn.AttentionBackendEnum if group == "attn.backends" else attn.MLAPrefillBackendEnum
        )
        controls = read_controls("ATTN", environ or {})
        groups = ("attn.backends", "attn.mla_prefill_backends")
        # As a registry does: no scan with plugins disabled.
        records = () if controls.disable_plugins else scan_host("attn", groups, controls.reader)
        return discover(
            group=group,
            host="attn",
            controls=controls,
            builtin_names=[m.name for m in registry],
            sibling_groups=groups,
            records=records,
        )

    return run
