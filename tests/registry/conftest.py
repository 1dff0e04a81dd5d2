"""Fixtures for the registry core's tests: a plugin module and a one-call discovery."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

import attn
from attn.registry.controls import read_controls
from attn.registry.discovery import DiscoveryResult, discover

PLUGIN_SOURCE = '''\
from attn import AttentionBackend, MLAPrefillBackend


class Backend(AttentionBackend):
    """An attention backend shipped by a plugin."""


class Other(AttentionBackend):
    """A second attention backend in the same module."""


class Outer:
    class Inner(AttentionBackend):
        """A nested backend class."""


class Prefill(MLAPrefillBackend):
    """An MLA prefill backend shipped by a plugin."""


class NotABackend:
    """A class that derives from neither interface."""


not_a_class = 3
'''

Discover = Callable[..., DiscoveryResult]


@pytest.fixture
def plugin_module(site):
    """The first site, holding the module ``plug.mod`` with a few backend classes."""
    site.module("plug.mod", PLUGIN_SOURCE)
    return site


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
