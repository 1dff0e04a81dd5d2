"""attn test plugin requiring attn>=99."""

from typing import ClassVar

from attn import AttentionBackend


class IncompatibleAttentionBackend(AttentionBackend):
    """A backend that attn must never merge: its distribution requires attn>=99."""

    requires: ClassVar[tuple[str, ...]] = ()
