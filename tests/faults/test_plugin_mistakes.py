"""Plugin code that exits, and plugin classes that declare their kernel wrongly.

Each case runs every command the fault catalogue runs (:func:`harness.check_case`),
in every discovery mode: nothing ends the process or prints a traceback, ``attn
doctor --load`` names the plugin with a fix, and the listing's reason says what
is wrong with the class.
"""

from __future__ import annotations

import pytest
from harness import MODES, Expect, check_case, set_mode

GROUP = "attn.backends"
HEAD = "from attn import AttentionBackend\n\n\n"
#: An exception whose str() ends the process with exit code 4.
EXITING = "class Exiting(Exception):\n    def __str__(self):\n        raise SystemExit(4)\n\n\n"

#: name -> (module hostile_mod's source, what doctor --load and list --load name)
CASES = {
    "generator-exit-at-import": ("raise GeneratorExit\n", "cannot be loaded: GeneratorExit"),
    "str-exits-at-import": (
        EXITING + "raise Exiting\n",
        "Exiting (its message cannot be shown: str() raised SystemExit)",
    ),
    "str-exits-in-missing-requirements": (
        HEAD + EXITING + "class Backend(AttentionBackend):\n    @classmethod\n"
        "    def missing_requirements(cls):\n        raise Exiting\n",
        (
            "its missing_requirements() raised Exiting (its message cannot be shown: str() raised "
            "SystemExit)"
        ),
    ),
    "own-package-module-missing": (
        "import hostile_mod.kernels\n",
        "hostile's own package 'hostile_mod' has no module 'hostile_mod.kernels'",
    ),
    "requires-a-string": (
        HEAD + "class Backend(AttentionBackend):\n    requires = 'torch'\n",
        (
            "TypeError: Backend.requires is the string 'torch', not a tuple: "
            "write requires = ('torch',)"
        ),
    ),
    "requires-modules-longer": (
        HEAD + "class Backend(AttentionBackend):\n    requires = ('acme-kernels',)\n"
        "    requires_modules = ('acme_kernels', 'extra')\n",
        (
            "Backend.requires_modules ('acme_kernels', 'extra') does not match requires "
            "('acme-kernels',): give one import name per distribution, in the same order"
        ),
    ),
}


@pytest.mark.parametrize(("name", "mode"), [(n, m) for n in CASES for m in MODES])
def test_plugin_mistake(name, mode, site, tmp_path, monkeypatch):
    """The backend is broken under --load, with the culprit named; nothing else changes."""
    source, culprit = CASES[name]
    # A package, so that a module missing inside it is the plugin's own.
    site.module("hostile_mod.__init__", source)
    site.dist("hostile", entry_points={GROUP: {"FLASH_ATTN": "hostile_mod:Backend"}})
    set_mode(mode, tmp_path, monkeypatch)
    check_case(Expect(doctor=0, doctor_load=1, culprit=("hostile 1.0", culprit)), mode, monkeypatch)
