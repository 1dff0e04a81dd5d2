"""The backend class that attn lists and hands out as ``TEMPLATE_ATTN``.

attn imports this module only when the backend is asked for, but listing and
``attn doctor --load`` import it too, so it must import cheaply: import the
kernel library inside :meth:`TemplateAttentionBackend.get_impl_cls`, never at
module level, and name it in ``requires``.
"""

from __future__ import annotations

from typing import ClassVar

from attn import AttentionBackend


class TemplateAttentionBackend(AttentionBackend):
    """Scaled dot-product attention on the CPU, in pure Python."""

    # The distributions the kernel needs (pip names); attn reports the backend
    # unavailable, naming them, when one is missing. This one needs none. A
    # GPU kernel would say ("vendor-kernels",) and, if the import name differs
    # from the distribution name, requires_modules = ("vendor_kernels",).
    requires: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def get_name(cls) -> str:
        """The name hosts show for this backend."""
        return "TEMPLATE_ATTN"

    @classmethod
    def get_impl_cls(cls) -> type:
        """The class that computes attention (imported here, not at module level)."""
        from .impl import TemplateAttentionImpl  # noqa: PLC0415 - keeps the kernel off import

        return TemplateAttentionImpl
