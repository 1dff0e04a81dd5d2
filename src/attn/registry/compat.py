"""Checking a plugin's declared requirement on its host with :mod:`packaging`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, final

from ._metadata import canonical_name

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["HostRequirement", "check_host_requirement"]


@final
@dataclass(frozen=True, slots=True)
class HostRequirement:
    """What one distribution says about the host, and the verdict on it."""

    declared: bool
    """Some ``Requires-Dist`` names the host, whatever its marker."""
    requirements: tuple[str, ...]
    """The ``Requires-Dist`` strings that name the host, as written."""
    problem: str | None
    """Why the installed host does not satisfy them, or ``None``."""


# The name at the head of a PEP 508 requirement; whatever follows it (extras,
# a specifier, a URL, a marker) starts with a character a name cannot hold.
_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


def _names_host(requirement: str, host: str) -> bool:
    # A cheap pre-filter so packaging parses only the lines that matter.
    match = _NAME.match(requirement)
    return match is not None and canonical_name(match.group(1)) == host


def check_host_requirement(  # noqa: C901 - one branch per way a requirement fails
    requires: Iterable[str], host: str, host_version: str | None
) -> HostRequirement:
    """Check the ``Requires-Dist`` entries in *requires* that name *host*.

    Markers are evaluated for this interpreter (with no extra selected, as
    pip does for a plain install). Every applicable specifier must contain
    *host_version*; pre-releases and dev builds of the host satisfy as
    PEP 440 orders them.
    """
    from packaging.markers import UndefinedEnvironmentName  # noqa: PLC0415 - off import attn
    from packaging.requirements import InvalidRequirement, Requirement  # noqa: PLC0415
    from packaging.version import InvalidVersion, Version  # noqa: PLC0415

    host = canonical_name(host)
    naming = tuple(line for line in requires if _names_host(line, host))
    if not naming:
        return HostRequirement(declared=False, requirements=(), problem=None)
    problems: list[str] = []
    for line in naming:
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            problems.append(f"has an invalid requirement {line!r} ({exc})")
            continue
        if requirement.marker is not None:
            try:
                applies = requirement.marker.evaluate({"extra": ""})
            except UndefinedEnvironmentName as exc:
                problems.append(f"has a requirement with an unusable marker {line!r} ({exc})")
                continue
            if not applies:
                continue
        if not str(requirement.specifier):
            continue
        if host_version is None:
            problems.append(f"requires {host}{requirement.specifier}, but {host} is not installed")
            continue
        try:
            installed = Version(host_version)
        except InvalidVersion:
            problems.append(
                f"requires {host}{requirement.specifier}, "
                f"installed {host_version} is not a PEP 440 version"
            )
            continue
        if not requirement.specifier.contains(installed, prereleases=True):
            problems.append(f"requires {host}{requirement.specifier}, installed {host_version}")
    return HostRequirement(
        declared=True,
        requirements=naming,
        problem="; ".join(problems) if problems else None,
    )
