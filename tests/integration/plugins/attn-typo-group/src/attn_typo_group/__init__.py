"""attn test plugin declaring its backend in the misspelt group attn.backend."""

from typing import ClassVar

from attn import AttentionBackend


class TypoAttentionBackend(AttentionBackend):
    """A backend attn never sees: its entry point is in the wrong group."""

    requires: ClassVar[tuple[str, ...]] = ()
