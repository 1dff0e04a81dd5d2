"""What one scan found, shared by every registry of a host in this process.

The registries of one host (its sibling groups, e.g. ``attn.backends`` and
``attn.mla_prefill_backends``) read the same distributions, so the first of
them to discover scans ``sys.path`` once for all of them, and the others use
that scan. ``refresh()`` scans again and replaces it.
"""

from __future__ import annotations

import os
import sys

from ._metadata import canonical_name, reader

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ._metadata import DistributionRecord

__all__ = ["forget", "shared_records"]

_SHARED: dict[str, tuple[tuple[object, ...], tuple[DistributionRecord, ...]]] = {}


def _process_key(groups: Iterable[str]) -> tuple[object, ...]:
    # Relative sys.path entries ('' included) are read against the working folder.
    return (tuple(sorted(set(groups))), tuple(sys.path), os.getcwd(), reader())  # noqa: PTH109


def shared_records(
    host: str,
    groups: Iterable[str],
    scan: Callable[[], tuple[DistributionRecord, ...]],
    *,
    fresh: bool = False,
) -> tuple[DistributionRecord, ...]:
    """The records of *host*'s last scan in this process, or a new scan (with *fresh*).

    A scan is shared while ``sys.path``, the working folder, the reader and the
    host's groups stay the same.
    """
    host_key = canonical_name(host)
    key = _process_key(groups)
    if not fresh:
        held = _SHARED.get(host_key)
        if held is not None and held[0] == key:
            return held[1]
    records = scan()
    _SHARED[host_key] = (key, records)
    return records


def forget(host: str | None = None) -> None:
    """Drop *host*'s shared scan, or every one (the next discovery scans again)."""
    if host is None:
        _SHARED.clear()
    else:
        _SHARED.pop(canonical_name(host), None)
