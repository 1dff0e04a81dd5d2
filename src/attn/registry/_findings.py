"""Discovery's verdicts: requirements on the host (packaging decides), findings, warnings.

An entry of name and version clauses only skips the 20-40 ms ``packaging.requirements`` import.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from ._metadata import UNREADABLE_KEY, DistributionRecord, EntryPointRecord
from .codes import READER_CODES, Code
from .controls import Controls, canonical_name, exporting
from .errors import Record, reinstalling
from .report import Conflict, DiscoveryResult, Finding, PluginRecord

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    _Declared = tuple[EntryPointRecord, DistributionRecord]  # an entry point and its declarer

# The name at the head of an entry, as packaging reads it: only the host's entries are parsed.
_N = r"[A-Za-z0-9][A-Za-z0-9._-]*\b"  # as packaging reads a name; its blanks: spaces and tabs
_NAME = re.compile(rf"\s*({_N})")  # which entries name the host; packaging judges them

# An entry of the name and version clauses only: the clauses are handed to SpecifierSet. Only
# versions in normal form, which every packaging release reads as SpecifierSet does (22.0's
# Requirement stops at the "a" of "alpha"; up to 26.3 a "===" takes a comma with it).
_RELEASE = r"(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*"
_TAGS = r"(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?(?:\+[a-z0-9]+(?:\.[a-z0-9]+)*)?"
_CLAUSE = rf"(?:~=|==|!=|<=|>=|<|>)[ \t]*{_RELEASE}(?:\.\*|{_TAGS})"
_CLAUSES_ONLY = re.compile(rf"[ \t]*{_N}[ \t]*((?:{_CLAUSE}[ \t]*(?:,[ \t]*(?=\S)|\Z))*)[ \t]*")


class Failure(Record):
    """One ``Requires-Dist`` entry on the host that rules its distribution out."""

    code: Code
    requirement: str
    specifier: str = ""  # as packaging renders it
    error: str | None = None  # packaging's message, when it could not parse a version or entry


class HostRequirement(Record):
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
    naming = tuple(r for r in requires if (m := _NAME.match(r)) and canonical_name(m[1]) == host)
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
        except (ValueError, KeyError) as exc:  # KeyError (packaging 25+): a variable metadata lacks
            text = f"undefined marker variable {exc}" if isinstance(exc, KeyError) else str(exc)
            return Failure(Code.INVALID_REQUIREMENT, line, error=text.partition("\n")[0])
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


def conflict_finding(conflict: Conflict, group: str, controls: Controls) -> Finding:
    keys = dict.fromkeys(c.distribution_key for c in conflict.claimants)
    firsts = [next(c for c in conflict.claimants if c.distribution_key == k) for k in keys]
    winner, runner_up = firsts[0], next(iter(firsts[1:]), None)  # each distribution's first
    name, count, variable = conflict.name, len(firsts), controls.prefer_variable
    claimants = ", ".join(f"{c.origin_label}: {c.value!r}" for c in firsts)  # not own repeats
    kind, message = Code.SHADOWED, f"{name!r} is provided by {count} distributions ({claimants}); "
    if runner_up is None:  # none to choose
        values = ", ".join(repr(c.value) for c in conflict.claimants)
        message = f"{winner.origin_label} declares {name!r} {len(conflict.claimants)} times "
        message += f"({values}); only the first ({winner.value!r}) counts"
        dist = winner.distribution
        fix = f"remove the other declarations of {name!r} from {dist}'s entry points in group "
        fix += f"{group!r} and reinstall {dist}, or report it to its authors"
    elif controls.preference(winner.distribution) < controls.preference(runner_up.distribution):
        kind, message = Code.PREFERRED, f"{message}{winner.origin_label} wins, as {variable} asks"
        fix = f"nothing to do; change {variable} to choose another"
    else:
        message += f"{winner.origin_label} wins ({winner.won_because})"
        keep, others = winner.distribution, (c.distribution for c in firsts[1:])
        fix = f"choose the winner with {variable} (nothing else changes): "
        fix += f"{controls.adding(keep, prefer=True)} keeps {keep}, "
        fix += f"{controls.adding(*others, prefer=True)} makes {runner_up.distribution} win; "
        fix += "or uninstall all but one"
    return Finding(kind, name, message, fix, *winner.about(group))


def unusable_fix(
    where: str, name: str, problem: Code, version: str | None, *, reinstall: bool = True
) -> str:
    """The fix for an unusable metadata copy; without *reinstall* (another copy is used), for it."""
    fix = f"delete {where}"
    if problem is Code.PERMISSION_DENIED:
        fix = f"make {where} readable (chmod -R a+rX {where})"
    elif problem in {Code.NO_METADATA, Code.NO_NAME}:
        fix += " (left behind by an interrupted install)"
    elif reinstall:  # its files are broken: a new copy may be too
        fix += f" and reinstall {name} ({reinstalling(name, version)}); "
        return f"{fix}if the new copy is broken too, report it to {name}'s authors"
    return f"{fix}, or reinstall {name}" if reinstall else fix


def unreadable_findings(records: Iterable[DistributionRecord]) -> Iterator[Finding]:
    """Entry points that Python cannot read, and ``sys.path`` parts attn cannot see into."""
    for problem, r in ((r.entry_points_problem, r) for r in records if r.entry_points_problem):
        subject, message, distribution, version = r.location, str(problem), None, None
        if r.key != UNREADABLE_KEY:
            subject, distribution, version = r.name, r.name, r.version
            fix = unusable_fix(r.location, r.name, problem.code, version)
            lost = "those entries are" if r.entry_points else "any backend it declares is"
            label = f"{r.name} {version}" if version else r.name
            message = f"{label}: {problem} (at {r.location}); {lost} not in effect"
        elif problem.code is Code.PATH_UNREADABLE:
            fix = f"make {r.location} readable, or take it off sys.path"
        else:
            fix = "fix, update or uninstall the package that adds that finder to sys.meta_path"
        yield Finding(Code.UNREADABLE_METADATA, subject, message, fix, distribution, version)


def plugin_findings(
    plugins: Sequence[PluginRecord], group: str, host: str, host_version: str | None
) -> Iterator[Finding]:
    """What doctor says about the invalid and incompatible entry points."""
    for p in (q for q in plugins if q.status in {"invalid", "incompatible"}):
        if p.status == "invalid" and p.code in READER_CODES:  # the metadata's problem
            kind, message = Code.UNREADABLE_METADATA, f"{p.origin_label} declares {p.name!r} = "
            message += f"{p.value!r}, but {p.reason}"
            fix = unusable_fix(p.location, p.distribution, Code(p.code), p.distribution_version)
        elif p.status == "invalid":  # its name or value; a requirement's message follows
            kind, message = Code.INVALID, f"{p.origin_label}: entry point {p.name!r} = "
            message += f"{p.value!r} is invalid: {p.reason}"
            name = "".join(c if f"_{c}".isidentifier() else "_" for c in p.name)  # not \W: ² is \w
            name, value = re.sub(r"^(?=\d)", "_", name) or "NAME", "module:Class"
            if p.code is Code.INVALID_NAME or re.fullmatch(r"([^\W\d]\w*\.)+[A-Z]\w*", p.value):
                value = p.value if p.code is Code.INVALID_NAME else ":".join(p.value.rsplit(".", 1))
            fix = f'fix {p.distribution}\'s entry point in group {group!r} to {name} = "{value}"'
            if p.code is Code.INVALID_REQUIREMENT:  # the distribution's: every one it rules out
                ours = (f"{q.name!r} = {q.value!r}" for q in plugins if q.location == p.location)
                message = f"{p.origin_label} declares {', '.join(ours)}, but {p.reason}"
                fix = f"fix the requirement on {host} in {p.distribution}'s dependencies to a "
                fix += "valid PEP 508 one"
            fix += f" and reinstall {p.distribution}, or report it to its authors"
        else:  # incompatible
            unmet = check_host_requirement(p.requirements, host, host_version).failures
            every = check_host_requirement(p.requirements, host, None).failures  # each range
            wanted = f"pip install '{host}{','.join(f.specifier for f in every)}'"
            fix = f"install the {host} release {p.distribution} requires ({wanted})"
            if host_version is not None and not any(f.error for f in unmet):  # none supports it
                newer = f"install a release of {p.distribution} that supports {host} {host_version}"
                fix = f"{newer} (pip install --upgrade {p.distribution}), or {fix}"
            kind, message = Code.INCOMPATIBLE, f"{p.origin_label} provides {p.name!r} = {p.value!r}"
            message += f" but is incompatible: {p.reason}"
        yield Finding(kind, p.name, message, fix, *p.about(group))


def name_findings(
    plugins: Sequence[PluginRecord],
    undeclared: Iterable[PluginRecord],
    host: str,
    builtin_names: Sequence[str],
    group: str,
) -> Iterator[Finding]:
    """Plugins that declare no requirement on the host, and names only like a built-in's."""
    for p in undeclared:
        ours = (f"{q.name!r} = {q.value!r}" for q in plugins if q.location == p.location)
        msg = f"{p.origin_label} declares {', '.join(ours)} but no requirement on {host}, so its "
        msg += "compatibility cannot be checked"
        fix = f"add {host!r} with a version range to {p.distribution}'s dependencies "
        fix += f"and reinstall {p.distribution}, or report it to its authors"
        yield Finding(Code.UNDECLARED_REQUIREMENT, p.distribution, msg, fix, *p.about(group)[:3])
    folded = {unicodedata.normalize("NFKC", n).casefold(): n for n in builtin_names}
    for p in plugins:
        other = folded.get(unicodedata.normalize("NFKC", p.name).casefold())
        if other is not None and other != p.name:
            how = "only by case (names are case sensitive)"
            if p.name.casefold() != other.casefold():
                how = "only by the width or form of its characters, such as fullwidth letters "
                how += "(names are compared as written)"
            message = f"{p.origin_label} {'adds' if p.status == 'used' else 'declares'} {p.name!r}"
            message += f", which differs from the built-in {other!r} {how}"
            fix = f"rename the entry point to {other!r} to override the built-in"
            yield Finding(Code.CASE_COLLISION, p.name, message, fix, *p.about(group))


def typo_findings(typos: Sequence[_Declared], group: str) -> Iterator[Finding]:
    """One finding per distribution and group that looks like a typo of *group*."""
    for dist, typo in dict.fromkeys((d, ep.group) for ep, d in typos):
        ours = [ep for ep, d in typos if (d, ep.group) == (dist, typo)]
        entries = ", ".join(f"{ep.name!r} = {ep.value!r}" for ep in ours)
        name, version = dist.name, dist.version
        message = f"{name} {version or ''}".rstrip() + f" declares {entries} in group {typo!r}, "
        message += f"which looks like a typo of {group!r}; attn does not read it"
        fix = f"rename the group to {group!r} where {name} declares it, then reinstall {name} "
        fix += "(pip install -e . in its checkout, or install the fixed release): the entry points "
        fix += "attn reads are written at install time, so doctor reports this until the reinstall"
        yield Finding(Code.TYPO_GROUP, name, message, fix, name, version, typo)


def unmatched_findings(
    controls: Controls, host: str, plugins: Sequence[DistributionRecord], hidden: set[str]
) -> Iterator[Finding]:
    """Names in ``<PREFIX>_PLUGINS`` or ``_PREFER`` matching no *plugins* nor the kit's *hidden*."""
    keys, prefer = {canonical_name(d.name) for d in plugins}, controls.prefer_variable  # as chosen
    valid = ", ".join(sorted({d.name for d in plugins}))
    none = f"{exporting(controls.plugins_variable, None)} (none installed)"
    only = f"use one of: {valid}" if keys else none
    kept = ",".join(w for w in controls.prefer_as_written if canonical_name(w) in keys)
    drop = f"remove the names that match nothing ({exporting(prefer, kept)})"
    drop += f", or put one of these in its place: {valid}" if keys else ""
    named = [(controls.plugins_variable, w) for w in controls.only_as_written]
    named += [(prefer, w) for w in controls.prefer_as_written]
    for variable, written in named:
        if canonical_name(written) not in keys | {*map(canonical_name, hidden)}:
            message = f"{variable} names {written!r}, which is not an installed {host} "
            message += "plugin distribution"
            fix = drop if variable == prefer else only
            yield Finding(Code.UNMATCHED_SELECTION, written, message, fix)


def merge_warnings(
    result: DiscoveryResult, noun: str, doctor: str, builtins: Mapping[str, object]
) -> list[tuple[str, str]]:
    """The ``(code, message)`` of every warning merging *result* issues (*doctor*: for fixes)."""
    in_group, run = f"In entry-point group {result.group!r}, ", f"Run {doctor} for the fix."
    where = {Code.SHADOWED: in_group, Code.UNMATCHED_SELECTION: "", Code.TYPO_GROUP: ""}
    warned = [
        (f.kind.value, f"{where[f.kind]}{f.message}; {f.fix}")
        for f in result.findings
        if f.kind in where  # a conflict settled by <PREFIX>_PREFER is a preferred note
    ]
    in_effect = {q.name: q for q in result.used}
    for p in (q for q in result.plugins if q.status in {Code.INCOMPATIBLE, Code.INVALID}):
        then = f"{p.name!r} is not available"
        if builtins.get(p.name) is not None:  # it has a default
            then = f"the built-in {p.name} stays in effect"
        if used := in_effect.get(p.name):
            then = f"{used.origin_label}'s {p.name} stays in effect"
        message = f"{noun} {p.name!r} from {p.origin_label} (entry point {p.value!r}) is "
        warned.append((p.status, f"{message}{p.status}: {p.reason}; {then}. {run}"))
    warned += [(Code.UNREADABLE_METADATA.value, f"{f.message}. {run}") for f in result.unreadable]
    return warned
