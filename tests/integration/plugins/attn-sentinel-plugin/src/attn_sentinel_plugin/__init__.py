"""attn test plugin that writes ``$ATTN_SENTINEL_FILE`` when imported."""

import os
from pathlib import Path
from typing import ClassVar

from attn import AttentionBackend

_sentinel = os.environ.get("ATTN_SENTINEL_FILE")
if _sentinel:
    Path(_sentinel).write_text("imported\n", encoding="utf-8")


class SentinelAttentionBackend(AttentionBackend):
    """A backend whose module announces that it was imported."""

    requires: ClassVar[tuple[str, ...]] = ()
