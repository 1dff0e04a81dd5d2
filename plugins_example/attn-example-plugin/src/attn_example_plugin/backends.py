"""Attention backends provided by attn-example-plugin.

Import nothing heavy here: attn imports this module when
``AttentionBackendEnum.FLASH_ATTN.get_class()`` (or ``EXAMPLE_ATTN``) is
called. Import kernel libraries inside the methods that run the kernel.
"""

from typing import ClassVar

from attn import AttentionBackend


class ExampleFlashAttentionBackend(AttentionBackend):
    """A FlashAttention backend that replaces attn's built-in ``FLASH_ATTN``.

    Declared under the built-in name ``FLASH_ATTN``, so every lookup of
    ``AttentionBackendEnum.FLASH_ATTN`` returns this class while the plugin is
    installed.
    """

    # The third-party packages the kernel needs (distribution names).
    requires: ClassVar[tuple[str, ...]] = ()


class ExampleAttentionBackend(AttentionBackend):
    """A new attention backend, available as ``AttentionBackendEnum["EXAMPLE_ATTN"]``."""

    requires: ClassVar[tuple[str, ...]] = ()
