"""A registry's plugins read from installed metadata only, by a pipeline of small functions."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from collections import defaultdict
from dataclasses import replace
from os.path import realpath
from typing import TYPE_CHECKING

from . import _findings
from ._metadata import UNREADABLE_KEY, entry_point_pattern, installed_with, project_folder, scan
from .codes import Code
from .controls import Controls, canonical_name
from .errors import ClassPath, InvalidPathError, joined, parse_path
from .report import Conflict, DiscoveryResult, Finding, PluginRecord, PluginStatus

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Iterator, Sequence

    from ._metadata import DistributionRecord, EntryPointRecord

_SEPARATORS = re.compile(r"[-_.\s]+")  # between the words of a group name


def parse_entry_point_value(value: str) -> ClassPath:
    """Parse an entry point value as `importlib.metadata` does (`InvalidPathError` if not)."""
    if (match := entry_point_pattern().match(value.strip())) is None:
        raise InvalidPathError(value, "expected 'module:attr'")
    if match.group("attr") is None:
        raise InvalidPathError(value, "no attribute part; expected 'module:attr'")
    return parse_path(f"{match.group('module')}:{match.group('attr')}")


def _build_residue(a: DistributionRecord, b: DistributionRecord) -> bool:
    """Whether one copy is the ``NAME.egg-info`` that setuptools leaves in the installed project."""
    egg, dist = sorted((a, b), key=lambda r: r.location.endswith(".dist-info"))
    if not (egg.location.endswith(".egg-info") and dist.location.endswith(".dist-info")):
        return False
    same = egg.version is not None and egg.version == dist.version
    source = project_folder(dist.location, editable_only=False) if same else None
    return source is not None and realpath(egg.location).startswith(realpath(source) + os.sep)


def deduplicate(
    records: Sequence[DistributionRecord], relevant: Collection[str], groups: Sequence[str]
) -> tuple[tuple[DistributionRecord, ...], tuple[Finding, ...]]:
    """Keep one copy per distribution, the first usable one, and report the others (DESIGN 6)."""
    copies: dict[str, list[DistributionRecord]] = defaultdict(list)
    for record in (r for r in records if r.key != UNREADABLE_KEY):
        copies[record.key].append(record)
    chosen: dict[str, DistributionRecord] = {}
    findings: list[Finding] = []
    for key, found in copies.items():
        winner = next((r for r in found if r.metadata_problem is None), None)
        if winner is not None:
            chosen[key] = winner
        elif key in relevant and any(r.entry_points for r in found):
            chosen[key] = next(r for r in found if r.entry_points)
            continue  # its entry points are listed as invalid, with the reason
        if key not in relevant and not any(r.entry_points or r.entry_points_problem for r in found):
            continue
        named = {ep.group for r in found for ep in r.entry_points}
        declares = [any(n == g or misspelt(n, g) for n in named) for g in groups]
        note = not (key in relevant or any(r.entry_points_problem for r in found) or declares[0])
        if note and any(declares[1:]):
            continue  # a plugin of a sibling registry: that registry reports it
        for finding in _losing_copies(found, winner, note):
            if note:  # the same finding, as a note
                message = f"{finding.message}; it declares no entry point in the registry's "
                message += "groups, so no backend comes from it"
                fix = f"nothing to do for attn; to tidy up, {finding.fix}"
                finding = replace(finding, kind=Code.NON_PLUGIN_COPY, message=message, fix=fix)  # noqa: PLW2901
            findings.append(finding)
    return tuple(r for r in records if chosen.get(r.key) is r), tuple(findings)


def _losing_copies(
    found: Sequence[DistributionRecord], winner: DistributionRecord | None, note: bool = False
) -> Iterator[Finding]:
    real = functools.cache(realpath) if len(found) > 1 else realpath  # each path resolved once
    each = [] if winner is None else [winner]  # the copy used, then the real ones it hides
    for other in (c for c in found if c is not winner and c.metadata_problem is None):
        same = {real(c.location) for c in each}  # lib64 -> lib, or a build residue: one install
        if real(other.location) not in same and not _build_residue(each[0], other):
            each.append(other)
    if len(each) > 1:  # the finding's version is the first ignored copy's
        name, n, ignored = each[0].name, len(each), each[1:]
        both, times = ("both", "twice") if n == 2 else (f"all {n}", f"{n} times")  # noqa: PLR2004
        at = [
            f"{c.version or 'no version'} at {c.location} ({'used' if c is winner else 'ignored'})"
            for c in each
        ]
        message = f"{name} is installed {times}: {joined(at)}"
        keep = next((c for c in each if os.access(f"{c.location}/RECORD", os.F_OK)), each[0])
        gone = (c.path_entry if c.location.endswith("/") else c.location for c in each)  # a zip's
        fix = f"delete {joined([g for g, c in zip(gone, each, strict=True) if c is not keep])}"
        fix += "" if keep is each[0] else f" ({keep.location} is the copy pip installed)"
        venv = realpath(sys.prefix) + os.sep if sys.prefix != sys.base_prefix else ""
        inside = [not venv or real(c.location).startswith(venv) for c in each]  # pip's reach
        if all(inside):
            fix += f", or uninstall {both} copies (pip uninstall {name}, {times}) and reinstall"
        base = realpath(sys.base_prefix) + os.sep if note and venv and inside[0] else ""
        if not (base and all(real(c.location).startswith(base) for c in ignored)):  # its base's
            yield Finding(Code.DUPLICATE_METADATA, name, message, fix, name, ignored[0].version)
    for other in found:
        if (problem := other.metadata_problem) is not None:
            used = "attn does not use it" if winner is None else f"attn uses {winner.location}"
            name, where = (winner or other).name, other.location
            message = f"{name}: the metadata copy at {where} cannot be used ({problem}); {used}"
            fix = _findings.unusable_fix(
                where, other.name, problem.code, other.version, reinstall=winner is None
            )
            yield Finding(Code.EMPTY_METADATA, name, message, fix, name)


@functools.lru_cache(maxsize=1024)
def looks_like_typo(candidate: str, group: str) -> bool:
    """Whether group *candidate* looks like a misspelling of *group* (not ``triton.backends``)."""
    if candidate == group:
        return False
    if _SEPARATORS.sub("", candidate.lower()) == _SEPARATORS.sub("", group.lower()):
        return True
    # The projects (before the first dot, else separator) must be one edit apart at most.
    a, b = _project(candidate).lower(), _project(group).lower()
    i = len(os.path.commonprefix((a, b)))  # noqa: RUF071 - of strings: the common head
    swapped = a[i : i + 2] == b[i : i + 2][::-1] and a[i + 2 :] == b[i + 2 :]
    if not (swapped or a[i + 1 :] in {b[i + 1 :], b[i:]} or a[i:] == b[i + 1 :]):
        return False
    x, y = candidate.lower(), group.lower()
    if 2 * min(len(x), len(y)) / (len(x) + len(y)) < 0.85:  # noqa: PLR2004 - the ratio's bound
        return False  # such as a sibling registry's group: no difflib import
    import difflib  # noqa: PLC0415 - only for the few groups one edit apart

    return difflib.SequenceMatcher(None, x, y).ratio() >= 0.85  # noqa: PLR2004


def _project(group: str) -> str:
    return (group.split(".", 1) if "." in group else _SEPARATORS.split(group, 1))[0]


def misspelt(candidate: str, group: str) -> bool:
    """A typo of *group*, unless its project part is another importable project (``xattn``)."""
    if not looks_like_typo(candidate, group):
        return False
    project = _project(candidate)  # a typo: the host's own project, not a module name,
    if project.lower() != _project(group).lower() and project.isidentifier():
        from importlib.util import find_spec  # noqa: PLC0415 - 1 ms of a bare process: typos only

        with contextlib.suppress(Exception):  # or no module's (find_spec imports nothing)
            return find_spec(project) is None  # a finder that raises: a typo
    return True


def scan_host(host: str, groups: Iterable[str], using: str) -> tuple[DistributionRecord, ...]:
    """Scan ``sys.path`` (with the reader *using*) for the host and *groups*' distributions."""
    groups = frozenset(groups)  # a verdict per group, not per entry point:
    wanted = functools.cache(lambda g: g in groups or any(looks_like_typo(g, x) for x in groups))
    return scan(lambda ep: wanted(ep.group), (canonical_name(host),), kept_only=True, using=using)


def _rank(plugin: PluginRecord, controls: Controls) -> tuple[int, int, str]:  # conflict order
    return controls.preference(plugin.distribution), plugin.path_index, plugin.distribution_key


def resolve_conflicts(
    plugins: Sequence[PluginRecord], controls: Controls
) -> tuple[tuple[PluginRecord, ...], tuple[Conflict, ...]]:
    """Pick one winner per name among the ``used`` entry points; the others are ``shadowed``."""
    by_name: dict[str, list[PluginRecord]] = defaultdict(list)
    for plugin in (p for p in plugins if p.status == "used"):
        by_name[plugin.name].append(plugin)
    replaced: dict[int, PluginRecord] = {}
    conflicts = []
    for name, claimants in ((n, c) for n, c in by_name.items() if len(c) > 1):
        winner, *losers = sorted(claimants, key=lambda p: _rank(p, controls))
        reasons = []
        for loser in losers:
            if controls.preference(winner.distribution) < controls.preference(loser.distribution):
                why = f"listed first in {controls.prefer_variable}"
            elif winner.distribution_key == loser.distribution_key:
                why = "declared first"
            elif winner.path_index < loser.path_index:
                why = "earlier on sys.path"
            else:
                why = "same sys.path entry, name sorts first"
            reasons.append((winner.distribution_key == loser.distribution_key, why))
            text = f"{name!r} is also provided by {winner.origin_label}, which wins ({why})"
            replaced[id(loser)] = replace(loser, status="shadowed", reason=text, code=Code.SHADOWED)
        won = [w for own, w in reasons if not own] or [w for _, w in reasons]  # others' first
        replaced[id(winner)] = replace(winner, won_because=", ".join(dict.fromkeys(won)))
        claimed = tuple(replaced[id(p)] for p in (winner, *losers))
        keys = dict.fromkeys(p.distribution_key for p in claimed)  # a claimant declaring it twice
        own = [tuple(p for p in claimed if p.distribution_key == k) for k in keys if len(keys) > 1]
        conflicts += [Conflict(name, c) for c in (claimed, *own) if len(c) > 1]  # is told so too
    return tuple(replaced.get(id(p), p) for p in plugins), tuple(conflicts)


def _status(
    dist: DistributionRecord, requirement: _findings.HostRequirement, controls: Controls
) -> tuple[PluginStatus, Code | None, str | None] | None:
    """The status of a distribution's entry points, when it does not depend on each (DESIGN 6)."""
    if controls.blocks(dist.name):
        listed = ",".join(controls.block_as_written)
        return "disabled", Code.BLOCKED, f"blocked by {controls.block_variable}={listed}"
    if not controls.selects(dist.name):
        listed = f"{controls.plugins_variable}={','.join(controls.only_as_written)}"
        return "disabled", Code.NOT_SELECTED, f"not selected by {listed}"
    if dist.metadata_problem is not None:
        reason = f"the distribution's metadata cannot be read: {dist.metadata_problem}"
        return "invalid", dist.metadata_problem.code, reason
    if requirement.code is None:
        return None
    unparseable = requirement.code is Code.INVALID_REQUIREMENT  # the plugin's mistake: invalid
    return "invalid" if unparseable else "incompatible", requirement.code, requirement.reason


def held_back(plugin: PluginRecord, host: str, installed: str | None) -> str | None:
    """Why a disabled entry point would still be rejected once the controls let it in, or None."""
    why = _findings.check_host_requirement(plugin.requirements, host, installed).reason  # first
    invalid = _parsed(plugin)[1]  # then its name or value (DESIGN 6)
    return why or (f"its entry point is invalid: {invalid[2]}" if invalid else None)


def rejections(result: DiscoveryResult, name: str, controls: Controls, host: str) -> Iterator[str]:
    """Each claimant of *name* not in effect, why, and what lets it in (or why that would fail)."""
    bad = {f.subject for f in result.findings if f.kind is Code.UNMATCHED_SELECTION}
    for p in (p for p in result.plugins if p.name == name and p.status != "used"):
        line = f"{p.origin_label} provides {name!r} = {p.value!r} but is {p.status}: {p.reason}"
        if p.status == "disabled":  # unless it would be rejected anyway: then why
            why = held_back(p, host, result.host_version)
            fix = f" ({controls.letting_in(p.distribution, bad)} to use it)"
            line += f"; let in, it would be rejected too: {why}" if why else fix
        yield line


def _parsed(
    ep: EntryPointRecord | PluginRecord,
) -> tuple[ClassPath | None, tuple[PluginStatus, Code, str] | None]:
    """An entry point's parsed value, or why its value or name is invalid."""
    try:  # the value first: its fix renames a name that is no identifier too
        path = parse_entry_point_value(ep.value)
    except InvalidPathError as exc:
        return None, ("invalid", Code.INVALID_VALUE, exc.reason)
    if not ep.name.isidentifier():
        return None, ("invalid", Code.INVALID_NAME, "backend names must be Python identifiers")
    return path, None


def imported_first(
    records: Sequence[DistributionRecord], host_key: str, root: str | None
) -> Sequence[DistributionRecord]:
    """*records*, the host's copy installed with its code (under *root*) first, not a stale one."""
    copies = [r for r in records if r.key == host_key and r.metadata_problem is None]
    if root is None or len(copies) < 2:  # noqa: PLR2004
        return records
    owner = next((r for r in copies if installed_with(r.path_entry, r.location, root)), None)
    if owner is None or owner is copies[0]:
        return records
    at = records.index(copies[0])  # owner comes after it: moved before it
    return [*records[:at], owner, *(r for r in records[at:] if r is not owner)]


def discover(
    *,
    group: str,
    host: str,
    controls: Controls,
    builtin_names: Sequence[str],
    sibling_groups: Sequence[str] = (),
    records: Sequence[DistributionRecord],
    host_root: str | None = None,
) -> DiscoveryResult:
    """Run the whole pipeline for *group* (*host_root*: where the host's code was imported from)."""
    host_key, groups, hidden = canonical_name(host), {group, *sibling_groups}, set[str]()
    if controls.disable_plugins:  # no entry-point discovery at all: no metadata is read
        return DiscoveryResult(group, None, (), (), (), plugins_disabled=True)
    if (sites := controls.testing_sites) is not None:  # the kit's folders, os.pathsep-separated
        allowed = {realpath(site) for site in sites.split(os.pathsep) if site}
        hidden = {r.name for r in records if any(ep.group in groups for ep in r.entry_points)}
        records = [r for r in records if r.key == host_key or realpath(r.path_entry) in allowed]
    records = imported_first(records, host_key, host_root)
    relevant = {r.key for r in records if any(ep.group == group for ep in r.entry_points)}
    dists, found = deduplicate(records, relevant | {host_key}, (group, *sibling_groups))
    # A distribution the controls keep out (not attn's own): its copies and unreadable files too.
    out = {r.key for r in records if controls.leaves_out(r.name)} - {host_key, UNREADABLE_KEY}
    found = tuple(f for f in found if canonical_name(f.subject) not in out)
    host_version = next((d.version for d in dists if d.key == host_key), None)

    plugins: list[PluginRecord] = []
    undeclared: dict[str, PluginRecord] = {}  # the first used entry point of each, by key
    for dist in dists:
        eps = [ep for ep in dist.entry_points if ep.group == group]
        if not eps or dist.key == host_key:
            continue
        requires = dist.metadata.requires if dist.metadata else ()
        requirement = _findings.check_host_requirement(requires, host_key, host_version)
        verdict = _status(dist, requirement, controls)
        same = (dist.name, dist.key, dist.version, dist.location, dist.path_index)
        valid_first: dict[str, bool] = {}  # only a name's first declaration counts
        for ep in eps:
            path, invalid = _parsed(ep)
            if not valid_first.setdefault(ep.name, invalid is None) and invalid is None:
                why = f"{ep.name!r} is declared first with an invalid value; only that one counts"
                invalid = ("shadowed", Code.SHADOWED, why)
            status, code, reason = verdict or invalid or ("used", None, None)
            fields = (*same, requirement.requirements, status, reason, path)
            plugins.append(record := PluginRecord(ep.name, ep.value, *fields, code=code))
            if status == "used" and not requirement.requirements:
                undeclared.setdefault(dist.key, record)
    resolved, conflicts = resolve_conflicts(plugins, controls)

    other = [(ep, d) for d in dists for ep in d.entry_points if ep.group not in groups]
    typo_of = {g: {h for h in groups if misspelt(g, h)} for g in {ep.group for ep, _ in other}}
    misspelt_by = [(ep, d) for ep, d in other if group in typo_of[ep.group]]  # each asked once
    typos = [(ep, d) for ep, d in misspelt_by if not controls.leaves_out(d.name)]
    unreadable = tuple(_findings.unreadable_findings(r for r in records if r.key not in out))
    host_plugins = [  # a typo's declarer too, of any of the host's groups (the same everywhere)
        d for d in dists if d.key != host_key and any(ep.group in groups for ep in d.entry_points)
    ] + [d for ep, d in other if typo_of[ep.group]]
    found += (
        *unreadable,
        *_findings.typo_findings(typos, group),
        *_findings.plugin_findings(resolved, group, host_key, host_version),
        *(_findings.conflict_finding(conflict, group, controls) for conflict in conflicts),
        *_findings.name_findings(resolved, undeclared.values(), host_key, builtin_names, group),
        *_findings.unmatched_findings(controls, host, host_plugins, hidden),
    )
    misgrouped = tuple(
        (ep.name, d.name if d.version is None else f"{d.name} {d.version}", ep.group, ep.value)
        for ep, d in typos
    )
    ordered = sorted(resolved, key=lambda p: (p.name, p.status != "used", *_rank(p, controls)))
    head = (group, host_version, tuple(ordered), conflicts, found)
    return DiscoveryResult(*head, misgrouped=misgrouped, unreadable=unreadable)
