"""MLA prefill backends provided by attn-example-mla.

Import nothing heavy here: attn imports this module when
``MLAPrefillBackendEnum.TRITON_RAGGED.get_class()`` (or
``EXAMPLE_MLA_PREFILL``) is called. Import kernel libraries inside the methods
that run the kernel.
"""

from typing import ClassVar

from attn import MLAPrefillBackend


class ExampleTritonRaggedPrefillBackend(MLAPrefillBackend):
    """A ragged Triton prefill backend that replaces attn's built-in ``TRITON_RAGGED``.

    Declared under the built-in name ``TRITON_RAGGED``, so every lookup of
    ``MLAPrefillBackendEnum.TRITON_RAGGED`` returns this class while the
    plugin is installed.
    """

    # The third-party packages the kernel needs (distribution names).
    requires: ClassVar[tuple[str, ...]] = ()


class ExampleMLAPrefillBackend(MLAPrefillBackend):
    """A new MLA prefill backend, available as ``MLAPrefillBackendEnum["EXAMPLE_MLA_PREFILL"]``."""

    requires: ClassVar[tuple[str, ...]] = ()
