"""Checking a plugin's ``Requires-Dist`` entries on its host: packaging decides (DESIGN 4).

An entry of name and version clauses only skips the 20-40 ms ``packaging.requirements`` import.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from .controls import canonical_name
from .errors import Code

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Failure", "HostRequirement", "check_host_requirement"]

# The name at the head of an entry, as packaging reads it: only the host's entries are parsed.
_NAME = re.compile(r"\s*([A-Za-z0-9._-]+)")

# An entry of the name and version clauses only: the clauses are handed to SpecifierSet.
_CLAUSE = r"(?:~=|===|==|!=|<=|>=|<|>)\s*[A-Za-z0-9._+*!-]+"
_CLAUSES_ONLY = re.compile(rf"\s*[A-Za-z0-9._-]+\s*((?:{_CLAUSE})(?:\s*,\s*{_CLAUSE})*)?\s*")


class Failure(NamedTuple):
    """One ``Requires-Dist`` entry on the host that rules its distribution out."""

    code: Code
    requirement: str
    specifier: str = ""  # as packaging renders it
    error: str | None = None  # packaging's message, when it could not parse a version or entry


class HostRequirement(NamedTuple):
    """What one distribution's ``Requires-Dist`` says about the host, and the verdict."""

    host: str
    installed: str | None
    requirements: tuple[str, ...] = ()  # the entries that name the host, as written
    failures: tuple[Failure, ...] = ()

    @property
    def code(self) -> Code | None:
        """Why the distribution cannot be used, or ``None`` when it can."""
        return self.failures[0].code if self.failures else None

    @property
    def reason(self) -> str | None:
        """The failures in words (``requires attn>=9.0, installed 0.1.0``), or ``None``."""
        parts = []
        for f in self.failures:
            wanted = f"requires {self.host}{f.specifier}"
            if f.code is Code.INVALID_REQUIREMENT:
                parts.append(f"has an invalid requirement {f.requirement!r} ({f.error})")
            elif f.code is Code.HOST_NOT_INSTALLED:
                parts.append(f"{wanted}, but {self.host} is not installed")
            else:
                because = f" ({f.error})" if f.error else ""
                parts.append(f"{wanted}, installed {self.installed}{because}")
        return "; ".join(parts) or None


def check_host_requirement(
    requires: Iterable[str], host: str, installed: str | None
) -> HostRequirement:
    """The verdict of packaging on the entries of *requires* that name *host*."""
    host = canonical_name(host)
    naming = tuple(
        line for line in requires if (m := _NAME.match(line)) and canonical_name(m[1]) == host
    )
    failures = [f for line in naming if (f := _failure(line, installed)) is not None]
    # Incompatible comes before invalid (DESIGN 6): with an unmet entry, the unmet ones count.
    unmet = [f for f in failures if f.code is not Code.INVALID_REQUIREMENT]
    return HostRequirement(host, installed, naming, tuple(unmet or failures))


def _failure(line: str, installed: str | None, *, short: bool = True) -> Failure | None:
    """How *line* fails against the *installed* host, or ``None``; *short*: see the module."""
    from packaging.specifiers import SpecifierSet  # noqa: PLC0415 - only with a plugin on the host
    from packaging.version import Version  # noqa: PLC0415

    clauses = _CLAUSES_ONLY.fullmatch(line) if short else None
    try:
        specifier = SpecifierSet(clauses[1] or "") if clauses else None
    except ValueError:  # packaging's own words for what is wrong: Requirement's
        specifier = None
    if specifier is None:
        from packaging.requirements import Requirement  # noqa: PLC0415 - about 20 ms, see above

        try:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                return None
        except ValueError as exc:  # any parse or evaluation error; its other lines draw a caret
            return Failure(Code.INVALID_REQUIREMENT, line, error=str(exc).partition("\n")[0])
        specifier = requirement.specifier
    if not specifier:
        return None
    if installed is None:
        return Failure(Code.HOST_NOT_INSTALLED, line, str(specifier))
    try:
        holds = specifier.contains(Version(installed), prereleases=True)
    except ValueError as exc:  # the host's own version is not PEP 440: nothing holds it
        return Failure(Code.REQUIREMENT_UNMET, line, str(specifier), str(exc))
    return None if holds else Failure(Code.REQUIREMENT_UNMET, line, str(specifier))
