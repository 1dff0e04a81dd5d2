"""Fixtures for the registry core's tests: a one-call discovery."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

import attn
from attn.registry.controls import read_controls
from attn.registry.discovery import DiscoveryResult, discover

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
        return discover(
            group=group,
            host="attn",
            controls=read_controls("ATTN", environ or {}),
            builtin_names=[m.name for m in registry],
            sibling_groups=("attn.backends", "attn.mla_prefill_backends"),
        )

    return run
