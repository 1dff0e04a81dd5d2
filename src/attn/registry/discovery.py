"""Reading a registry's plugins from installed metadata, as a pipeline.

```text
scan -> deduplicate -> select -> validate -> check the host requirement
     -> apply the controls -> resolve conflicts -> findings
```

`discover()` is the whole pipeline, each step a small function over plain
records. Nothing here imports a plugin: every verdict comes from metadata.
"""

from __future__ import annotations

import functools
import os
import re
from collections import defaultdict
from dataclasses import replace
from os.path import realpath
from typing import TYPE_CHECKING

from ._findings import (
    conflict_finding,
    name_findings,
    plugin_findings,
    typo_findings,
    unmatched_findings,
    unreadable_findings,
    unusable_fix,
)
from ._metadata import (
    UNREADABLE_KEY,
    DistributionRecord,
    EntryPointRecord,
    editable_source,
    entry_point_pattern,
    installed_with,
    scan,
)
from .compat import check_host_requirement
from .controls import canonical_name, reader
from .errors import Code, InvalidPathError
from .paths import ClassPath, parse_path
from .report import Conflict, DiscoveryResult, Finding, PluginRecord

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from .compat import HostRequirement
    from .controls import Controls
    from .report import PluginStatus

__all__ = [
    "Conflict",
    "DiscoveryResult",
    "deduplicate",
    "discover",
    "looks_like_typo",
    "parse_entry_point_value",
    "resolve_conflicts",
    "scan_host",
]

#: Private, per host: set by `attn.testing` while its fixture is active. A list of
#: folders (``os.pathsep``-separated); only distributions found in them count as
#: plugins (the host's own metadata is read wherever it is). Through the
#: environment, subprocesses of a test see the same plugins as the test.
TESTING_SITES_VARIABLE = "_{prefix}_TESTING_SITES"


def only_testing_sites(
    records: Sequence[DistributionRecord], host_key: str, prefix: str
) -> Sequence[DistributionRecord]:
    """*records*, less the plugins outside `TESTING_SITES_VARIABLE`'s folders, if set."""
    sites = os.environ.get(TESTING_SITES_VARIABLE.format(prefix=prefix))
    if sites is None:
        return records
    allowed = {realpath(site) for site in sites.split(os.pathsep) if site}
    return [r for r in records if r.key == host_key or realpath(r.path_entry) in allowed]


def parse_entry_point_value(value: str) -> ClassPath:
    """Parse an entry point value the way `importlib.metadata` does.

    Raises:
        InvalidPathError: the value has no ``module:attr`` form.
    """
    match = entry_point_pattern().match(value.strip())
    if match is None:
        raise InvalidPathError(value, "expected 'module:attr'")
    if match.group("attr") is None:
        raise InvalidPathError(value, "no attribute part; expected 'module:attr'")
    return parse_path(f"{match.group('module')}:{match.group('attr')}")


def _build_residue(a: DistributionRecord, b: DistributionRecord) -> bool:
    """Whether one copy is the ``*.egg-info`` setuptools leaves in the source of the other.

    ``pip install -e .`` of a setuptools project writes ``*.dist-info`` and
    leaves ``NAME.egg-info`` beside the package, on ``sys.path``: one install.
    """
    egg, dist = sorted((a, b), key=lambda r: r.location.endswith(".dist-info"))
    if not (egg.location.endswith(".egg-info") and dist.location.endswith(".dist-info")):
        return False
    same = egg.version is not None and egg.version == dist.version
    source = editable_source(dist.location) if same else None
    return source is not None and realpath(egg.location).startswith(realpath(source) + os.sep)


def _declares(records: Iterable[DistributionRecord], group: str) -> bool:
    """Whether some copy declares entry points in *group* or in a typo of it."""
    return any(
        ep.group == group or looks_like_typo(ep.group, group)
        for r in records
        for ep in r.entry_points
    )


def deduplicate(
    records: Sequence[DistributionRecord],
    relevant: Iterable[str],
    groups: Sequence[str] = (),
) -> tuple[tuple[DistributionRecord, ...], tuple[Finding, ...]]:
    """Keep one copy per distribution: the first usable one on ``sys.path``.

    As `importlib.metadata` would, except that an empty or unreadable copy
    never wins over a good one. A distribution whose copies are all unusable
    is kept (its first copy with entry points) when it is *relevant*, so they
    are listed ``invalid``. Losing copies of the *relevant* distributions, and
    of any with entry points, are reported. With *groups* (the registry's, then
    its siblings'), those of a distribution declaring nothing in the first or a
    typo of it are a note, or left to the sibling registry it is a plugin of.
    """
    relevant = set(relevant)
    copies: dict[str, list[DistributionRecord]] = defaultdict(list)
    for record in records:
        if record.key != UNREADABLE_KEY:
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
        note = bool(groups) and not (
            key in relevant
            or any(r.entry_points_problem for r in found)
            or _declares(found, groups[0])
        )
        if note and any(_declares(found, sibling) for sibling in groups[1:]):
            continue  # a plugin of a sibling registry: that registry reports it
        for finding in _losing_copies(found, winner):
            if note:
                finding = replace(  # noqa: PLW2901 - the same finding, as a note
                    finding,
                    kind=Code.NON_PLUGIN_COPY,
                    message=f"{finding.message}; it declares no entry point in the registry's "
                    "groups, so no backend comes from it",
                    fix=f"nothing to do for attn; to tidy up, {finding.fix}",
                )
            findings.append(finding)
    order = {id(r): i for i, r in enumerate(records)}
    return tuple(sorted(chosen.values(), key=lambda r: order[id(r)])), tuple(findings)


def _losing_copies(
    found: Sequence[DistributionRecord], winner: DistributionRecord | None
) -> Iterator[Finding]:
    """What is wrong with each copy of one distribution that does not win."""
    seen_real: set[str] = set()
    for other in found:
        if other is winner:
            continue
        problem = other.metadata_problem
        if problem is not None:
            used = "attn does not use it" if winner is None else f"attn uses {winner.location}"
            yield Finding(
                Code.EMPTY_METADATA,
                (winner or other).name,
                f"{(winner or other).name}: the metadata copy at {other.location} cannot be "
                f"used ({problem}); {used}",
                unusable_fix(other.location, other.name, problem, reinstall=winner is None),
            )
            continue
        assert winner is not None  # noqa: S101 - a usable copy wins before any other
        # realpath() only here, for a name found twice: a system call per folder.
        seen_real = seen_real or {realpath(winner.location)}
        real = realpath(other.location)
        # The same folder reached twice (a lib64 -> lib link), or an editable
        # install's own egg-info in its source folder: one install, not two.
        if real in seen_real or _build_residue(winner, other):
            continue
        seen_real.add(real)
        yield Finding(
            Code.DUPLICATE_METADATA,
            winner.name,
            f"{winner.name} is installed twice: {winner.version} at {winner.location} (used) "
            f"and {other.version} at {other.location} (ignored)",
            f"delete {other.location}, or uninstall both copies "
            f"(pip uninstall {winner.name}, twice) and reinstall",
        )


_SEPARATORS = re.compile(r"[-_.\s]+")


def _project(group: str) -> str:
    """The project a group belongs to: its part before the first dot (else the first separator)."""
    return (group.split(".", 1)[0] if "." in group else _SEPARATORS.split(group, 1)[0]).lower()


def _one_edit_apart(a: str, b: str) -> bool:
    """Whether *a* and *b* are equal or one insertion, deletion, substitution or swap apart."""
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    swapped = a[i : i + 2] == b[i : i + 2][::-1] and a[i + 2 :] == b[i + 2 :]
    return swapped or a[i + 1 :] in {b[i + 1 :], b[i:]} or a[i:] == b[i + 1 :]


@functools.lru_cache(maxsize=1024)
def looks_like_typo(candidate: str, group: str) -> bool:
    """Whether the entry-point group *candidate* looks like a misspelling of *group*.

    Only a near miss of the host's own group is: the same letters with other
    case or separators (``attn_backends``), or a close spelling whose project
    part (before the first dot) is the host's or one edit from it
    (``attn.backend``, ``atn.backends``). Another project's group
    (``triton.backends``) never is. Cached: every entry point asks.
    """
    if candidate == group:
        return False
    if _SEPARATORS.sub("", candidate.lower()) == _SEPARATORS.sub("", group.lower()):
        return True
    if not _one_edit_apart(_project(candidate), _project(group)):
        return False
    import difflib  # noqa: PLC0415 - only for the few groups one edit apart

    return difflib.SequenceMatcher(None, candidate.lower(), group.lower()).ratio() >= 0.85  # noqa: PLR2004


def scan_host(host: str, groups: Iterable[str], prefix: str) -> tuple[DistributionRecord, ...]:
    """Scan ``sys.path`` once for every registry of *host*, with the reader *prefix* picks.

    Only the host and the distributions with entry points in its *groups* (or
    in a typo of one) are read and returned, as the cache keeps them.
    """
    groups = frozenset(groups)

    def wanted(ep: EntryPointRecord) -> bool:
        return ep.group in groups or any(looks_like_typo(ep.group, g) for g in groups)

    return scan(wanted, also=(canonical_name(host),), kept_only=True, using=reader(prefix))


def _rank(record: PluginRecord) -> tuple[int, str]:
    return (record.path_index, record.distribution_key)


def _why(winner: PluginRecord, loser: PluginRecord, controls: Controls | None) -> str:
    if controls is not None and controls.preference(winner.distribution) < controls.preference(
        loser.distribution
    ):
        return f"listed first in {controls.prefer_variable}"
    if winner.distribution_key == loser.distribution_key:
        return "declared first"
    if winner.path_index < loser.path_index:
        return "earlier on sys.path"
    return "same sys.path entry, name sorts first"


def resolve_conflicts(
    plugins: Sequence[PluginRecord], controls: Controls | None = None
) -> tuple[tuple[PluginRecord, ...], tuple[Conflict, ...]]:
    """Pick one winner per name among the still-eligible entry points.

    The winner is the first in ``<PREFIX>_PREFER`` (of *controls*), then the
    earlier on ``sys.path``, then the smaller canonical distribution name
    (then declaration order); the others become ``shadowed``.
    """
    by_name: dict[str, list[PluginRecord]] = defaultdict(list)
    for plugin in plugins:
        if plugin.status == "used":
            by_name[plugin.name].append(plugin)
    replaced: dict[int, PluginRecord] = {}
    names = []

    def rank(record: PluginRecord) -> tuple[int, int, str]:
        return (0 if controls is None else controls.preference(record.distribution), *_rank(record))

    for name, claimants in by_name.items():
        if len(claimants) < 2:  # noqa: PLR2004
            continue
        winner, *losers = sorted(claimants, key=rank)  # stable: declaration order last
        reasons = [_why(winner, loser, controls) for loser in losers]
        for loser, why in zip(losers, reasons, strict=True):
            replaced[id(loser)] = loser.replace(
                status="shadowed",
                reason=f"{name!r} is also provided by {winner.origin_label}, which wins ({why})",
                code=Code.SHADOWED,
            )
        replaced[id(winner)] = winner.replace(won_because=", ".join(dict.fromkeys(reasons)))
        names.append((name, (winner, *losers)))
    conflicts = tuple(Conflict(n, tuple(replaced[id(p)] for p in ordered)) for n, ordered in names)
    return tuple(replaced.get(id(p), p) for p in plugins), conflicts


def _disabled(distribution: str, controls: Controls) -> tuple[Code, str] | None:
    """Why the controls leave *distribution* out, if they do (a block wins over a selection)."""
    if controls.blocks(distribution):
        return (
            Code.BLOCKED,
            f"blocked by {controls.block_variable}={','.join(controls.block_as_written)}",
        )
    if not controls.selects(distribution):
        listed = ",".join(controls.only_as_written)
        return Code.NOT_SELECTED, f"not selected by {controls.plugins_variable}={listed}"
    return None


def _invalid_reason(ep: EntryPointRecord) -> tuple[tuple[Code, str] | None, ClassPath | None]:
    if not ep.name.isidentifier():
        reason = (
            f"entry point name {ep.name!r} is not a valid identifier; "
            "backend names must be Python identifiers"
        )
        return (Code.INVALID_NAME, reason), None
    try:
        return None, parse_entry_point_value(ep.value)
    except InvalidPathError as exc:
        return (
            Code.INVALID_VALUE,
            f"entry point value {ep.value!r} is invalid: {exc.reason}",
        ), None


def _status(
    dist: DistributionRecord,
    requirement: HostRequirement,
    invalid: tuple[Code, str] | None,
    controls: Controls,
) -> tuple[PluginStatus, Code | None, str | None]:
    """An entry point's status, reason code and reason: the first that applies (DESIGN 6)."""
    disabled = _disabled(dist.name, controls)
    if disabled is not None:
        return "disabled", *disabled
    if dist.metadata_problem is not None:
        reason = f"the distribution's metadata cannot be read: {dist.metadata_problem}"
        return "invalid", dist.metadata_problem.code, reason
    if requirement.code is not None:
        # An entry packaging cannot parse is the plugin's mistake (invalid); one the
        # installed host does not satisfy, a mismatch of releases (incompatible).
        invalid_entry = requirement.code is Code.INVALID_REQUIREMENT
        return "invalid" if invalid_entry else "incompatible", requirement.code, requirement.reason
    if invalid is not None:
        return "invalid", *invalid
    return "used", None, None


def imported_first(
    records: Sequence[DistributionRecord], host_key: str, root: str | None
) -> Sequence[DistributionRecord]:
    """*records*, the host's copy installed with its imported code (under *root*) first.

    A stale copy of the host earlier on ``sys.path`` (``attn-0.0.5.dist-info``
    left behind) must not decide its version, nor be the copy kept.
    """
    copies = [r for r in records if r.key == host_key and r.metadata_problem is None]
    if root is None or len(copies) < 2:  # noqa: PLR2004
        return records
    owner = next((r for r in copies if installed_with(r.path_entry, r.location, root)), None)
    if owner is None or owner is copies[0]:
        return records
    rest = [r for r in records if r is not owner]
    at = rest.index(copies[0])
    return [*rest[:at], owner, *rest[at:]]


def discover(
    *,
    group: str,
    host: str,
    controls: Controls,
    builtin_names: Sequence[str],
    sibling_groups: Sequence[str] = (),
    records: Sequence[DistributionRecord] | None = None,
    host_root: str | None = None,
) -> DiscoveryResult:
    """Run the whole pipeline for *group* and return what it found.

    *host_root* is where the host's code was imported from (`._metadata.code_root`).
    """
    host_key = canonical_name(host)
    groups = {group, *sibling_groups}
    if controls.disable_plugins:  # no entry-point discovery at all: no metadata is read
        return DiscoveryResult(group, None, (), (), (), plugins_disabled=True)
    if records is None:
        records = scan_host(host, groups, controls.prefix)
    records = imported_first(
        only_testing_sites(records, host_key, controls.prefix), host_key, host_root
    )
    relevant = {r.key for r in records if any(ep.group == group for ep in r.entry_points)}
    dists, found = deduplicate(records, relevant | {host_key}, (group, *sibling_groups))
    host_version = next((d.version for d in dists if d.key == host_key), None)

    plugins: list[PluginRecord] = []
    undeclared: dict[str, PluginRecord] = {}  # the first used entry point of each, by key
    bad_requirement: set[str] = set()  # distributions invalid for their requirement on the host
    for dist in dists:
        eps = [ep for ep in dist.entry_points if ep.group == group]
        if not eps or dist.key == host_key:
            continue
        requires = dist.metadata.requires if dist.metadata else ()
        requirement = check_host_requirement(requires, host_key, host_version)
        if requirement.code is Code.INVALID_REQUIREMENT:
            bad_requirement.add(dist.key)
        for ep in eps:
            invalid, path = _invalid_reason(ep)
            status, code, reason = _status(dist, requirement, invalid, controls)
            record = PluginRecord(
                name=ep.name,
                value=ep.value,
                distribution=dist.name,
                distribution_key=dist.key,
                distribution_version=dist.version,
                location=dist.location,
                path_index=dist.path_index,
                requirements=requirement.requirements,
                status=status,
                reason=reason,
                path=path,
                code=code,
            )
            plugins.append(record)
            if status == "used" and not requirement.declared:
                undeclared.setdefault(dist.key, record)
    resolved, conflicts = resolve_conflicts(plugins, controls)

    typos = [
        (ep, d)
        for d in dists
        for ep in d.entry_points
        if ep.group not in groups and looks_like_typo(ep.group, group)
    ]
    unreadable = unreadable_findings(records)
    # The host's plugin distributions: those with entry points in any of its groups.
    host_plugins = [
        d for d in dists if d.key != host_key and any(ep.group in groups for ep in d.entry_points)
    ]
    found = (
        *found,
        *unreadable,
        *typo_findings(((d.name, ep.group) for ep, d in typos), group),
        *plugin_findings(
            resolved, dists, bad_requirement, group=group, host=host_key, host_version=host_version
        ),
        *(conflict_finding(conflict, group, controls) for conflict in conflicts),
        *name_findings(resolved, undeclared.values(), host_key, builtin_names),
        *unmatched_findings(controls, host, host_plugins),
    )
    return DiscoveryResult(
        group,
        host_version,
        tuple(sorted(resolved, key=lambda p: (p.name, _rank(p)))),
        conflicts,
        found,
        plugins_disabled=False,
        misgrouped=tuple(
            (ep.name, d.name if d.version is None else f"{d.name} {d.version}", ep.group)
            for ep, d in typos
        ),
        unreadable=tuple(unreadable),
    )
