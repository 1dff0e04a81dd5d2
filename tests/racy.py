"""Waiting out the discovery cache's racy tick on attn's own modules.

The cache trusts a scan only when everything it depends on, attn's own
modules included, was modified well before the scan began (``_cache.RACY_NS``).
Right after an edit or a checkout, a test that expects the file to be written
waits until those modules are old enough, instead of failing.
"""

from __future__ import annotations

import time
from pathlib import Path

from attn.registry import _cache


def settle_attn_sources() -> None:
    """Sleep until attn's cache-deciding modules are older than the racy tick (at most 3 s).

    Also past the kernel's file-clock tick: the files a test just wrote or dated back
    have a new ctime, and a scan that begins within that tick of it is not trusted.
    """
    time.sleep(2 * _cache.TICK_NS / 1e9)
    here = Path(_cache._HERE)
    newest = max((here / f"{name}.py").stat().st_mtime_ns for name in _cache._SOURCES)
    wait = (newest + _cache.RACY_NS - time.time_ns()) / 1e9
    if wait > 0:
        time.sleep(min(wait + 0.05, 3))
