"""attn test plugin without a requirement on attn."""

from typing import ClassVar

from attn import AttentionBackend


class NoRequireAttentionBackend(AttentionBackend):
    """A backend from a distribution that does not declare attn."""

    requires: ClassVar[tuple[str, ...]] = ()
