"""The backend class that attn lists and hands out as ``TEMPLATE_ATTN``.

attn imports this module only when the backend is asked for, and
``attn list --load`` and ``attn doctor --load`` import it too (a plain listing
never does), so it must import cheaply: import the
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
    def validate_configuration(cls, /, **settings: object) -> list[str]:
        """Why this backend cannot run with *settings*; empty when it can.

        attn's selection asks every candidate in turn and takes the first that
        says nothing against the settings. Check only what your kernel limits,
        ignore settings you do not know, and skip a setting that is not given;
        return sentences, and never import the kernel library here.
        """
        reasons = []
        device = settings.get("device")
        if device is not None and device != "cpu":
            reasons.append(f"runs on the CPU only, not {device!r}")
        use_mla = settings.get("use_mla")
        if use_mla not in (None, True, False):  # `attn select --set use_mla=False` passes "False"
            reasons.append(f"use_mla must be true or false, not {use_mla!r}")
        elif use_mla:
            reasons.append("no multi-head latent attention (MLA)")
        return reasons

    @classmethod
    def get_impl_cls(cls) -> type:
        """The class that computes attention (imported here, not at module level)."""
        from .impl import TemplateAttentionImpl  # noqa: PLC0415 - keeps the kernel off import

        return TemplateAttentionImpl
