"""attn test plugin B of a pair claiming SHARED_ATTN."""

from typing import ClassVar

from attn import AttentionBackend


class SharedAttentionBackend(AttentionBackend):
    """The SHARED_ATTN backend of attn-conflict-b."""

    requires: ClassVar[tuple[str, ...]] = ()
