"""Checking a plugin's declared requirement on its host with :mod:`packaging`."""

from __future__ import annotations

from ._metadata import canonical_name
from ._records import Record, final, set_field

# Not typing.TYPE_CHECKING: the check must not import typing (nor re) where
# packaging is not needed.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Iterable
    from re import Pattern
    from typing import Any

    from packaging.specifiers import SpecifierSet

__all__ = ["HostRequirement", "check_host_requirement"]


@final
class HostRequirement(Record):
    """What one distribution says about the host, and the verdict on it."""

    __slots__ = ("declared", "problem", "requirements")

    declared: bool
    """Some ``Requires-Dist`` names the host, whatever its marker."""
    requirements: tuple[str, ...]
    """The ``Requires-Dist`` strings that name the host, as written."""
    problem: str | None
    """Why the installed host does not satisfy them, or ``None``."""

    def __init__(
        self,
        declared: bool,
        requirements: tuple[str, ...],
        problem: str | None,
    ) -> None:
        """Hold the verdict on one distribution's host requirement."""
        set_field(self, "declared", declared)
        set_field(self, "requirements", requirements)
        set_field(self, "problem", problem)


_DIGITS = frozenset("0123456789")
_ALNUM = _DIGITS | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_NAME_CHARS = _ALNUM | frozenset("._-")


def _skip_space(line: str, at: int) -> int:
    """The first index from *at* on that is not whitespace (``str.isspace``, as ``re`` sees it)."""
    while at < len(line) and line[at].isspace():
        at += 1
    return at


def _host_name_end(line: str, host: str) -> int | None:
    """Where the name at the head of *line* ends if it is *host*'s, else ``None``.

    A name (PEP 508) is ASCII letters and digits, with ``.``, ``_`` and ``-``
    inside but not at either end; whatever follows it (extras, a specifier, a
    URL, a marker) starts with a character a name cannot hold.
    """
    start = end = _skip_space(line, 0)
    if start == len(line) or line[start] not in _ALNUM:
        return None
    while end < len(line) and line[end] in _NAME_CHARS:
        end += 1
    while line[end - 1] not in _ALNUM:
        end -= 1
    return end if canonical_name(line[start:end]) == host else None


def _names_host(requirement: str, host: str) -> bool:
    # A cheap pre-filter so only the lines that matter are checked.
    return _host_name_end(requirement, host) is not None


# A requirement with neither a marker nor a URL: name, extras, version specifiers
# (optionally in parentheses). Only these skip packaging.requirements, which
# imports packaging.markers and, through it, platform and subprocess.
_OP = r"(?:===|~=|==|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+"
_PLAIN = (
    rf"\s*[A-Za-z0-9._-]+\s*(?:\[[A-Za-z0-9._,\s-]*\])?\s*"
    rf"(?P<spec>\(\s*{_OP}(?:\s*,\s*{_OP})*\s*\)|{_OP}(?:\s*,\s*{_OP})*)?\s*"
)
#: _PLAIN, compiled on the first requirement that packaging checks.
_COMPILED: dict[str, Pattern[str]] = {}


def _plain_specifier(line: str) -> str | None:
    """The specifier text of a plain requirement, or ``None`` when packaging must parse it."""
    pattern = _COMPILED.get(_PLAIN)
    if pattern is None:
        import re  # noqa: PLC0415 - only requirements packaging checks need it

        pattern = _COMPILED[_PLAIN] = re.compile(_PLAIN)
    match = pattern.fullmatch(line)
    if match is None:
        return None
    return (match.group("spec") or "").strip().strip("()")


def _full_specifier(line: str) -> tuple[SpecifierSet | None, str | None]:
    """Parse *line* with packaging.requirements; ``None`` when it does not apply or is bad."""
    from packaging.markers import UndefinedEnvironmentName  # noqa: PLC0415 - off import attn
    from packaging.requirements import InvalidRequirement, Requirement  # noqa: PLC0415

    try:
        requirement = Requirement(line)
    except InvalidRequirement as exc:
        return None, f"has an invalid requirement {line!r} ({exc})"
    if requirement.marker is not None:
        try:
            applies = requirement.marker.evaluate({"extra": ""})
        except UndefinedEnvironmentName as exc:
            return None, f"has a requirement with an unusable marker {line!r} ({exc})"
        if not applies:
            return None, None
    return requirement.specifier, None


#: Verdicts already reached in this process (or read from the discovery cache),
#: keyed by (Requires-Dist entries, host, installed host version).
_VERDICTS: dict[tuple[tuple[str, ...], str, str | None], HostRequirement] = {}


def verdicts_for(requires: Iterable[Iterable[str]]) -> tuple[object, ...]:
    """The verdicts reached so far on these lists of requirements, as plain tuples."""
    wanted = {tuple(r) for r in requires}
    return tuple(
        (key, (v.declared, v.requirements, v.problem))
        for key, v in _VERDICTS.items()
        if key[0] in wanted
    )


def seed_verdicts(data: Iterable[Any]) -> None:
    """Remember verdicts read from the discovery cache (ignoring any malformed one)."""
    for item in data:
        try:
            (requires, host, version), (declared, naming, problem) = item
        except (TypeError, ValueError):
            continue
        if (
            type(requires) is tuple
            and all(type(r) is str for r in requires)
            and type(host) is str
            and (version is None or type(version) is str)
            and type(declared) is bool
            and type(naming) is tuple
            and all(type(r) is str for r in naming)
            and (problem is None or type(problem) is str)
        ):
            _VERDICTS.setdefault(
                (requires, host, version), HostRequirement(declared, naming, problem)
            )


def check_host_requirement(
    requires: Iterable[str], host: str, host_version: str | None
) -> HostRequirement:
    """Check the ``Requires-Dist`` entries in *requires* that name *host*.

    Markers are evaluated for this interpreter (with no extra selected, as
    pip does for a plain install). Every applicable specifier must contain
    *host_version*; pre-releases and dev builds of the host satisfy as
    PEP 440 orders them. A verdict is reached once per process (or read from
    the discovery cache): packaging is imported only to reach a new one.
    """
    requires = tuple(requires)
    key = (requires, canonical_name(host), host_version)
    verdict = _VERDICTS.get(key)
    if verdict is None:
        verdict = _VERDICTS[key] = _check(requires, key[1], host_version)
    return verdict


def _check(  # noqa: C901 - one branch per way a requirement fails
    requires: Iterable[str], host: str, host_version: str | None
) -> HostRequirement:
    host = canonical_name(host)
    naming = tuple(line for line in requires if _names_host(line, host))
    if not naming:
        return HostRequirement(declared=False, requirements=(), problem=None)
    from packaging.specifiers import InvalidSpecifier, SpecifierSet  # noqa: PLC0415 - off import attn
    from packaging.version import InvalidVersion, Version  # noqa: PLC0415

    problems: list[str] = []
    for line in naming:
        plain = _plain_specifier(line)
        specifier = None
        if plain is not None:
            try:
                specifier = SpecifierSet(plain)
            except InvalidSpecifier:
                specifier = None  # packaging words the problem below
        if specifier is None:
            specifier, problem = _full_specifier(line)
            if problem is not None:
                problems.append(problem)
            if specifier is None:
                continue
        if not str(specifier):
            continue
        if host_version is None:
            problems.append(f"requires {host}{specifier}, but {host} is not installed")
            continue
        try:
            installed = Version(host_version)
        except InvalidVersion:
            problems.append(
                f"requires {host}{specifier}, installed {host_version} is not a PEP 440 version"
            )
            continue
        if not specifier.contains(installed, prereleases=True):
            problems.append(f"requires {host}{specifier}, installed {host_version}")
    return HostRequirement(
        declared=True,
        requirements=naming,
        problem="; ".join(problems) if problems else None,
    )
