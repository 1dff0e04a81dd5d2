"""Checking a plugin's declared requirement on its host: `packaging` decides.

Each ``Requires-Dist`` entry naming the host is parsed by packaging, its marker
evaluated for this interpreter with no extra selected (as a plain ``pip
install`` does), and its specifier must contain the installed host version,
pre-releases included. An entry packaging cannot parse or evaluate is that
plugin's problem, never an exception. packaging is imported only when some
distribution names the host: a discovery without plugins does not pay for it.

An entry that is only the name and version clauses (``attn>=0.1,<2``, by far
the most common) goes to packaging's `SpecifierSet` directly: that spares
importing ``packaging.requirements`` and its markers, about 20 ms of CPU in a
process that has ``packaging.version`` already and 40 ms in a bare one.
Anything else (a marker, extras, a URL, parentheses, or clauses the
`SpecifierSet` refuses) is parsed by ``Requirement``; the tests compare the
two on the same entries, on the oldest and newest packaging attn supports.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from .errors import Code

if TYPE_CHECKING:
    from collections.abc import Iterable

    from packaging.specifiers import SpecifierSet

__all__ = ["Failure", "HostRequirement", "check_host_requirement"]

# The name at the head of an entry, as packaging reads it from every entry it can
# parse: only the entries whose name is the host's are parsed.
_NAME = re.compile(r"\s*([A-Za-z0-9._-]+)")

# An entry of the name and version clauses only: the clauses are handed to SpecifierSet.
_CLAUSE = r"(?:~=|===|==|!=|<=|>=|<|>)\s*[A-Za-z0-9._+*!-]+"
_CLAUSES_ONLY = re.compile(rf"\s*[A-Za-z0-9._-]+\s*((?:{_CLAUSE})(?:\s*,\s*{_CLAUSE})*)?\s*")


def _canonical(name: str) -> str:
    """PEP 503's normalized name (packaging's ``canonicalize_name``; the tests compare)."""
    return re.sub(r"[-_.]+", "-", name).lower()


class Failure(NamedTuple):
    """One ``Requires-Dist`` entry on the host that rules its distribution out."""

    code: Code
    """``INVALID_REQUIREMENT``, ``REQUIREMENT_UNMET`` or ``HOST_NOT_INSTALLED``."""
    requirement: str
    """The entry, as written."""
    specifier: str = ""
    """Its specifier as packaging renders it (clauses sorted, joined by commas)."""
    error: str | None = None
    """packaging's message, when it could not parse the entry or the installed version."""


class HostRequirement(NamedTuple):
    """What one distribution's ``Requires-Dist`` says about the host, and the verdict."""

    host: str
    """The host's canonical name."""
    installed: str | None
    """The installed host's version (``None``: not installed)."""
    requirements: tuple[str, ...] = ()
    """The entries that name the host, whatever their marker, as written."""
    failures: tuple[Failure, ...] = ()
    """The entries that fail, all with one code (see `check_host_requirement()`)."""

    @property
    def declared(self) -> bool:
        """Whether some entry names the host (else compatibility cannot be checked)."""
        return bool(self.requirements)

    @property
    def code(self) -> Code | None:
        """Why the distribution cannot be used, or ``None`` when it can."""
        return self.failures[0].code if self.failures else None

    @property
    def reason(self) -> str | None:
        """The failures in words (``requires attn>=9.0, installed 0.1.0``), or ``None``."""
        host, parts = self.host, []
        for failure in self.failures:
            if failure.code is Code.INVALID_REQUIREMENT:
                parts.append(
                    f"has an invalid requirement {failure.requirement!r} ({failure.error})"
                )
            elif failure.code is Code.HOST_NOT_INSTALLED:
                parts.append(f"requires {host}{failure.specifier}, but {host} is not installed")
            else:
                because = f" ({failure.error})" if failure.error else ""
                parts.append(
                    f"requires {host}{failure.specifier}, installed {self.installed}{because}"
                )
        return "; ".join(parts) or None


def check_host_requirement(
    requires: Iterable[str], host: str, installed: str | None
) -> HostRequirement:
    """The verdict of packaging on the entries of *requires* that name *host*."""
    host = _canonical(host)
    naming = tuple(
        line for line in requires if (m := _NAME.match(line)) and _canonical(m[1]) == host
    )
    failures = [f for line in naming if (f := _failure(line, installed)) is not None]
    # Status precedence (DESIGN 6) puts incompatible before invalid: with one unmet and
    # one unparseable entry, the distribution is incompatible, named by its unmet entries.
    unmet = [f for f in failures if f.code is not Code.INVALID_REQUIREMENT]
    return HostRequirement(host, installed, naming, tuple(unmet or failures))


def _failure(line: str, installed: str | None) -> Failure | None:
    """How the entry *line* fails against the *installed* host, or ``None`` if it holds."""
    # Here, not at the top: packaging is only for a discovery with a plugin on the host.
    from packaging.specifiers import SpecifierSet  # noqa: PLC0415

    clauses = _CLAUSES_ONLY.fullmatch(line)
    if clauses is None:
        return _parsed_failure(line, installed)
    try:
        specifier = SpecifierSet(clauses[1] or "")
    except ValueError:  # packaging's own words for what is wrong: Requirement's
        return _parsed_failure(line, installed)
    return _unmet(line, specifier, installed)


def _parsed_failure(line: str, installed: str | None) -> Failure | None:
    """`_failure` for any entry: packaging's ``Requirement`` parses it, marker included."""
    from packaging.requirements import Requirement  # noqa: PLC0415 - about 20 ms, see above

    try:
        requirement = Requirement(line)
        applies = requirement.marker is None or requirement.marker.evaluate({"extra": ""})
    except ValueError as exc:  # every packaging parse or evaluation error is one
        # Its first line: the others draw a caret under the entry, which the reason names.
        return Failure(Code.INVALID_REQUIREMENT, line, error=str(exc).partition("\n")[0])
    return _unmet(line, requirement.specifier, installed) if applies else None


def _unmet(line: str, specifier: SpecifierSet, installed: str | None) -> Failure | None:
    from packaging.version import Version  # noqa: PLC0415

    if not specifier:
        return None
    if installed is None:
        return Failure(Code.HOST_NOT_INSTALLED, line, str(specifier))
    try:
        holds = specifier.contains(Version(installed), prereleases=True)
    except ValueError as exc:  # the host's own version is not PEP 440: nothing holds it
        return Failure(Code.REQUIREMENT_UNMET, line, str(specifier), str(exc))
    return None if holds else Failure(Code.REQUIREMENT_UNMET, line, str(specifier))
