"""attn test plugin with one valid and two invalid entry points."""

from typing import ClassVar

from attn import AttentionBackend


class Good(AttentionBackend):
    """The backend behind the valid GOOD_ATTN entry point."""

    requires: ClassVar[tuple[str, ...]] = ()
