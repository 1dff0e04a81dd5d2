"""Class paths in one form, ``module:qualname``; the dotted one (split at its last dot) at edges."""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

from .errors import InvalidPathError

__all__ = ["ClassPath", "code_root", "parse_path"]


class ClassPath(NamedTuple):
    """Where a backend class lives: a module and a qualified name in it (see `parse_path()`)."""

    module: str
    qualname: str

    @property
    def colon(self) -> str:
        """The canonical ``module:qualname`` form."""
        return f"{self.module}:{self.qualname}"

    @property
    def dotted(self) -> str:
        """The ``module.qualname`` form that ``get_path()`` returns."""
        return f"{self.module}.{self.qualname}"

    def __str__(self) -> str:
        """Render the canonical colon form."""
        return self.colon


def parse_path(path: object) -> ClassPath:
    """Parse ``module:QualName`` or ``module.QualName``; `InvalidPathError` if neither."""
    if isinstance(path, ClassPath):
        return path
    if not isinstance(path, str):
        raise InvalidPathError(path, f"expected a string, got {type(path).__name__}")
    text = path.strip()
    if text.count(":") > 1:
        raise InvalidPathError(path, "more than one ':'; expected 'module:QualName'")
    if ":" in text:
        module, _, qualname = (part.strip() for part in text.partition(":"))
    else:
        module, _, qualname = text.rpartition(".")
        if not module:
            why = "no module part; expected 'module:QualName' or 'module.QualName'"
            raise InvalidPathError(path, why)
    for part, what in ((module, "module"), (qualname, "qualified")):
        if what == "qualified" and "<locals>" in part:
            why = "a class defined inside a function cannot be imported by path"
            raise InvalidPathError(path, why)
        if not (part and all(p.isidentifier() for p in part.split("."))):
            raise InvalidPathError(path, f"{part!r} is not a dotted {what} name")
    return ClassPath(module, qualname)


def code_root(module: str) -> str | None:
    """The folder the top-level package (or module) of the imported *module* came from."""
    top = sys.modules.get(module.partition(".")[0])
    spec = getattr(top, "__spec__", None)
    locations = list(getattr(spec, "submodule_search_locations", None) or ())
    where = locations[0] if locations else getattr(top, "__file__", None)
    return os.path.dirname(where) if isinstance(where, str) else None  # noqa: PTH120
