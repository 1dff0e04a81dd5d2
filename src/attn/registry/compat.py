"""Checking a plugin's declared requirement on its host.

Simple requirements (the host's name and release-only version clauses, the
usual case) are checked here, with exactly :mod:`packaging`'s verdict and
wording; anything else goes to :mod:`packaging`, imported only then.
"""

from __future__ import annotations

from ._metadata import canonical_name
from ._records import Record, final, set_field

# Not typing.TYPE_CHECKING: a cold discovery of simple requirements must not
# import typing (nor re, nor packaging).
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from packaging.specifiers import SpecifierSet

    #: One simple clause: operator, version as written, its release numbers.
    Clause = tuple[str, str, tuple[int, ...]]

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


def _plain_specifier(line: str) -> str | None:
    """The specifier text of a plain requirement, or ``None`` when packaging must parse it."""
    import re  # noqa: PLC0415 - only requirements packaging checks need it (re caches the pattern)

    match = re.fullmatch(_PLAIN, line)
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
    the discovery cache), and :mod:`packaging` is imported only to reach a
    new one on a requirement that is not simple (see :func:`_simple_clauses`).
    """
    requires = tuple(requires)
    key = (requires, canonical_name(host), host_version)
    verdict = _VERDICTS.get(key)
    if verdict is None:
        verdict = _VERDICTS[key] = _check(requires, key[1], host_version)
    return verdict


def _check(requires: Iterable[str], host: str, host_version: str | None) -> HostRequirement:
    host = canonical_name(host)
    naming = tuple(line for line in requires if _names_host(line, host))
    if not naming:
        return HostRequirement(declared=False, requirements=(), problem=None)
    verdict = _simple_verdict(naming, host, host_version)
    if verdict is None:
        verdict = _packaging_verdict(naming, host, host_version)
    return verdict


# Two-character operators first: "<=" is not "<" then "=...".
_OPERATORS = ("~=", "==", "!=", "<=", ">=", "<", ">")


def _release(text: str) -> tuple[int, ...] | None:
    """The numbers of a release-only version (``1``, ``0.10.2``), or ``None``."""
    parts = text.split(".")
    if not all(part.isascii() and part.isdigit() for part in parts):
        return None
    try:
        return tuple(int(part) for part in parts)
    except ValueError:  # more digits than int() reads
        return None


def _trimmed(release: tuple[int, ...]) -> tuple[int, ...]:
    """*release* without its trailing zeros: ``1.0`` and ``1.0.0`` compare as ``1``."""
    end = len(release)
    while end and not release[end - 1]:
        end -= 1
    return release[:end]


def _simple_clauses(line: str, host: str) -> tuple[Clause, ...] | None:  # noqa: C901, PLR0911
    """The clauses of a simple requirement on *host*, or ``None`` when it is not one.

    Simple: the host's name, then nothing or comma-separated ``OP VERSION``
    clauses (optionally in one pair of parentheses), whitespace around each
    part, where OP is one of ``~= == != <= >= < >``, VERSION is release-only
    (digits and dots), ``~=`` has at least two numbers and no two clauses are
    the same once trailing zeros are dropped.
    """
    end = _host_name_end(line, host)
    if end is None:
        return None
    at = _skip_space(line, end)
    if at == len(line):
        return ()
    parenthesized = line[at] == "("
    if parenthesized:
        at = _skip_space(line, at + 1)
    clauses: list[Clause] = []
    while True:
        operator = next((op for op in _OPERATORS if line.startswith(op, at)), None)
        if operator is None:
            return None
        at = start = _skip_space(line, at + len(operator))
        while at < len(line) and (line[at] in _DIGITS or line[at] == "."):
            at += 1
        release = _release(line[start:at])
        if release is None or (operator == "~=" and len(release) == 1):
            return None
        clauses.append((operator, line[start:at], release))
        at = _skip_space(line, at)
        if at == len(line) or line[at] != ",":
            break
        at = _skip_space(line, at + 1)
    if parenthesized:
        if at == len(line) or line[at] != ")":
            return None
        at = _skip_space(line, at + 1)
    if at != len(line):
        return None
    if len({(op, _trimmed(release)) for op, _, release in clauses}) != len(clauses):
        return None  # packaging keeps one of equal clauses; leave which to it
    return tuple(clauses)


#: How the installed release may order against the clause's release, per operator.
_ORDERS = {">=": (0, 1), "<=": (-1, 0), "<": (-1,), ">": (1,), "==": (0,), "!=": (-1, 1)}


def _satisfies(installed: tuple[int, ...], operator: str, release: tuple[int, ...]) -> bool:
    """Whether release-only *installed* satisfies ``operator release``, as PEP 440 says."""
    have, want = _trimmed(installed), _trimmed(release)
    if operator != "~=":
        return (have > want) - (have < want) in _ORDERS[operator]
    # At least the release, and the same release but for its last number.
    prefix = release[:-1]
    padded = installed + (0,) * (len(prefix) - len(installed))
    return have >= want and padded[: len(prefix)] == prefix


def _simple_verdict(
    naming: tuple[str, ...], host: str, host_version: str | None
) -> HostRequirement | None:
    """The verdict on *naming* without packaging, or ``None`` unless every line is simple.

    Words every problem as :func:`_packaging_verdict` does: the clauses sorted
    by their text and joined by commas, as ``str(SpecifierSet)`` renders them.
    """
    installed = None if host_version is None else _release(host_version)
    problems: list[str] = []
    for line in naming:
        clauses = _simple_clauses(line, host)
        if clauses is None:
            return None
        if not clauses:
            continue
        specifier = ",".join(sorted(op + version for op, version, _ in clauses))
        if host_version is None:
            problems.append(f"requires {host}{specifier}, but {host} is not installed")
        elif installed is None:
            return None  # not a plain release: packaging's to compare, or to reject
        elif not all(_satisfies(installed, op, release) for op, _, release in clauses):
            problems.append(f"requires {host}{specifier}, installed {host_version}")
    return HostRequirement(
        declared=True,
        requirements=naming,
        problem="; ".join(problems) if problems else None,
    )


def _packaging_verdict(  # noqa: C901 - one branch per way a requirement fails
    naming: tuple[str, ...], host: str, host_version: str | None
) -> HostRequirement:
    """The verdict on *naming*, the lines that name *host*, from packaging."""
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
