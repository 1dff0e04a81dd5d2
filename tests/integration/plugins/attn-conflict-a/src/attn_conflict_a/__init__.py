"""attn test plugin A of a pair claiming SHARED_ATTN."""

from typing import ClassVar

from attn import AttentionBackend


class SharedAttentionBackend(AttentionBackend):
    """The SHARED_ATTN backend of attn-conflict-a."""

    requires: ClassVar[tuple[str, ...]] = ()
