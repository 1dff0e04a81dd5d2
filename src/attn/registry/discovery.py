"""Reading a registry's plugins from installed metadata, as a pipeline.

`discover()` is the whole pipeline; every step is a small function over
plain records, testable alone:

```text
scan -> deduplicate -> select -> validate -> check the host requirement
     -> apply the controls -> resolve conflicts -> findings
```

Nothing here imports a plugin: every verdict comes from metadata.
"""

from __future__ import annotations

import functools
import os
import unicodedata
from collections import defaultdict
from dataclasses import replace
from os.path import realpath
from typing import TYPE_CHECKING

from ._metadata import (
    UNREADABLE_KEY,
    DistributionRecord,
    EntryPointRecord,
    canonical_name,
    editable_source,
    entry_point_pattern,
    installed_with,
    reader,
    scan,
)
from .compat import check_host_requirement
from .errors import Code, InvalidPathError
from .paths import ClassPath, parse_path
from .report import Conflict, DiscoveryResult, Finding, PluginRecord

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from ._metadata import Problem
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


def conflict_finding(conflict: Conflict, group: str, controls: Controls) -> Finding:
    """What doctor (and strict mode) says about one conflict."""
    winner, runner_up = conflict.claimants[0], conflict.claimants[1]
    if conflict.within_one_distribution:
        return Finding(
            "shadowed",
            conflict.name,
            f"{winner.origin_label} declares {conflict.name!r} {len(conflict.claimants)} times "
            f"in {group!r}; the first declaration ({winner.value!r}) is used",
            f"remove the other declarations of {conflict.name!r} from {winner.distribution}'s "
            f"entry points ([project.entry-points.{group!r}] in its pyproject.toml), or report "
            "it to its authors",
        )
    names = ", ".join(c.origin_label for c in conflict.claimants)
    if conflict.preferred(controls):
        return Finding(
            "preferred",
            conflict.name,
            f"{conflict.name!r} is provided by {len(conflict.claimants)} distributions "
            f"({names}); {winner.origin_label} wins, as {controls.prefer_variable} asks",
            f"nothing to do; change {controls.prefer_variable} to choose another",
        )
    others = ",".join(c.distribution for c in conflict.claimants[1:])
    return Finding(
        "shadowed",
        conflict.name,
        f"{conflict.name!r} is provided by {len(conflict.claimants)} distributions "
        f"({names}); {winner.origin_label} wins ({winner.won_because})",
        f"choose the winner with {controls.prefer_variable} (nothing else changes): "
        f"{controls.prefer_variable}={winner.distribution} keeps {winner.distribution}, "
        f"{controls.prefer_variable}={others} makes {runner_up.distribution} win; "
        "or uninstall all but one",
    )


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
    """Whether one copy is the ``*.egg-info`` setuptools writes into the source of the other.

    ``pip install -e .`` of a setuptools project writes ``*.dist-info`` into
    site-packages and leaves ``NAME.egg-info`` beside the package (in ``src/``
    for a src layout), which the install puts on ``sys.path``: one install,
    two copies of the same version, not a distribution installed twice.
    """
    egg, dist = sorted((a, b), key=lambda r: r.location.endswith(".dist-info"))
    if not (egg.location.endswith(".egg-info") and dist.location.endswith(".dist-info")):
        return False
    if egg.version is None or egg.version != dist.version:
        return False
    source = editable_source(dist.location)
    if source is None:
        return False
    return realpath(egg.location).startswith(realpath(source) + os.sep)


_UNREADABLE_REASON = "the distribution's metadata cannot be read"


def _unusable_fix(where: str, name: str, problem: Problem, *, reinstall: bool = True) -> str:
    """The fix for a metadata copy that cannot be used, by what is wrong with it.

    Without *reinstall* (another copy is used), only what to do with this one.
    """
    if problem.code is Code.PERMISSION_DENIED:
        fix = f"make {where} readable (chmod -R a+rX {where})"
    elif problem.code in {Code.NO_METADATA, Code.NO_NAME}:
        fix = f"delete {where} (left behind by an interrupted install)"
    elif not reinstall:
        return f"delete {where}"
    else:  # its files are broken: a new copy may be too
        return (
            f"delete {where} and reinstall {name} (pip install --force-reinstall {name}); "
            f"if the new copy is broken too, report it to {name}'s authors"
        )
    return f"{fix}, or reinstall {name}" if reinstall else fix


def _declares(records: Iterable[DistributionRecord], group: str) -> bool:
    """Whether some copy declares entry points in *group* or in a group that looks like its typo."""
    declared = {ep.group for record in records for ep in record.entry_points}
    return any(g == group or looks_like_typo(g, group) for g in declared)


def deduplicate(
    records: Sequence[DistributionRecord],
    relevant: Iterable[str],
    groups: Sequence[str] = (),
) -> tuple[tuple[DistributionRecord, ...], tuple[Finding, ...]]:
    """Keep one copy per distribution: the first usable one on ``sys.path``.

    This is the copy `importlib.metadata` would use, except that an
    empty or unreadable copy never wins over a good one. A distribution whose
    only copies are unusable is kept (its first copy) when it declares entry
    points in a *relevant* group, so that they are listed as ``invalid``;
    otherwise it is dropped. Losing copies of the *relevant* distributions (and
    of any with entry points) are reported, except the egg-info an editable
    setuptools install leaves in its source. With *groups* (the registry's
    group, then its siblings), those of a distribution that declares no entry
    point in the first group or a typo of it are a note when it declares none
    in a sibling group either (no backend comes from it), and are left to the
    sibling registry when it does.
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
    # realpath() only for a name found twice: it costs a system call per folder.
    seen_real = set() if winner is None or len(found) < 2 else {realpath(winner.location)}  # noqa: PLR2004
    for other in found:
        if other is winner:
            continue
        problem = other.metadata_problem
        if problem is not None:
            if winner is None:
                message = (
                    f"{other.name}: the metadata copy at {other.location} cannot be used "
                    f"({problem}); attn does not use it"
                )
            else:
                message = (
                    f"{winner.name}: the metadata copy at {other.location} cannot be used "
                    f"({problem}); attn uses {winner.location}"
                )
            fix = _unusable_fix(other.location, other.name, problem, reinstall=winner is None)
            yield Finding("empty-metadata", (winner or other).name, message, fix)
            continue
        assert winner is not None  # noqa: S101 - a usable copy wins before any other
        real = realpath(other.location)
        # The same folder reached twice (a lib64 -> lib link), or an editable
        # install's own egg-info in its source folder: one install, not two.
        if real in seen_real or _build_residue(winner, other):
            continue
        seen_real.add(real)
        yield Finding(
            kind="duplicate-metadata",
            subject=winner.name,
            message=(
                f"{winner.name} is installed twice: {winner.version} at "
                f"{winner.location} (used) and {other.version} at {other.location} "
                "(ignored)"
            ),
            fix=f"delete {other.location}, or uninstall both copies "
            f"(pip uninstall {winner.name}, twice) and reinstall",
        )


def _separator(char: str) -> bool:
    return char in "-_." or char.isspace()


def _squashed(group: str) -> str:
    """*group* without separators (``-``, ``_``, ``.``, white space), lower case."""
    return "".join(char for char in group.lower() if not _separator(char))


def _project(group: str) -> str:
    """The project a group belongs to: its part before the first dot (else the first separator)."""
    if "." in group:
        return group.split(".", 1)[0].lower()
    end = next((i for i, char in enumerate(group) if _separator(char)), len(group))
    return group[:end].lower()


def _one_edit_apart(a: str, b: str) -> bool:
    """Whether *a* and *b* are equal or one insertion, deletion, substitution or swap apart."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    swapped = a[i : i + 2] == b[i : i + 2][::-1] and a[i + 2 :] == b[i + 2 :]
    return swapped or a[i + 1 :] in {b[i + 1 :], b[i:]} or a[i:] == b[i + 1 :]


def unreadable_findings(records: Sequence[DistributionRecord]) -> list[Finding]:
    """Entry points that Python cannot read, and ``sys.path`` parts attn cannot see into."""
    findings = []
    for record in records:
        problem = record.entry_points_problem
        if problem is None:
            continue
        if record.key == UNREADABLE_KEY:
            fix = (
                f"make {record.location} readable, or take it off sys.path"
                if problem.code is Code.PATH_UNREADABLE
                else "fix, update or uninstall the package that adds that finder to sys.meta_path"
            )
            findings.append(Finding("unreadable-metadata", record.location, str(problem), fix))
            continue
        findings.append(
            Finding(
                "unreadable-metadata",
                record.name,
                f"{record.name}: {problem} (at {record.location}); any backend it declares "
                "is not in effect",
                _unusable_fix(record.location, record.name, problem),
            )
        )
    return findings


@functools.lru_cache(maxsize=1024)
def looks_like_typo(candidate: str, group: str) -> bool:
    """Whether the entry-point group *candidate* looks like a misspelling of *group*.

    Only a near miss of the host's own group is: the same letters with other
    case or separators (``attn_backends``), or a close spelling whose project
    part (before the first dot) is the host's or one edit from it
    (``attn.backend``, ``atn.backends``). Another project's group
    (``triton.backends``, ``torch.backends``) never is, however alike the rest.
    Cached: a site declares few distinct groups, but every entry point asks.
    """
    if candidate == group:
        return False
    if _squashed(candidate) == _squashed(group):
        return True
    if not _one_edit_apart(_project(candidate), _project(group)):
        return False
    import difflib  # noqa: PLC0415 - only for the few groups one edit apart

    return difflib.SequenceMatcher(None, candidate.lower(), group.lower()).ratio() >= 0.85  # noqa: PLR2004


def scan_host(host: str, groups: Iterable[str], prefix: str) -> tuple[DistributionRecord, ...]:
    """Scan ``sys.path`` once for every registry of *host* (its entry-point *groups*).

    The reader is the one ``<PREFIX>_READER`` (of *prefix*) picks.

    Metadata is read for the host and for distributions with entry points in
    any of the groups or in a group that looks like a typo of one (and copies
    found twice or unreadable); only those copies are returned, as the cache keeps them.
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
    (then declaration order, for one distribution that declares a name
    twice); the others become ``shadowed``.
    """
    by_name: dict[str, list[PluginRecord]] = defaultdict(list)
    for plugin in plugins:
        if plugin.status == "used":
            by_name[plugin.name].append(plugin)
    replaced: dict[int, PluginRecord] = {}
    conflicts = []

    def rank(record: PluginRecord) -> tuple[int, int, str]:
        preference = 0 if controls is None else controls.preference(record.distribution)
        return (preference, *_rank(record))

    for name, claimants in by_name.items():
        if len(claimants) < 2:  # noqa: PLR2004
            continue
        ordered = sorted(claimants, key=rank)  # stable: declaration order last
        winner = ordered[0]
        reasons = []
        for loser in ordered[1:]:
            why = _why(winner, loser, controls)
            reasons.append(why)
            replaced[id(loser)] = loser.replace(
                status="shadowed",
                reason=f"{name!r} is also provided by {winner.origin_label}, which wins ({why})",
                code=Code.SHADOWED,
            )
        replaced[id(winner)] = winner.replace(won_because=", ".join(dict.fromkeys(reasons)))
        conflicts.append(Conflict(name, tuple(ordered)))
    resolved = tuple(replaced.get(id(p), p) for p in plugins)
    final_conflicts = tuple(
        Conflict(c.name, tuple(replaced.get(id(p), p) for p in c.claimants)) for c in conflicts
    )
    return resolved, final_conflicts


def _disabled(distribution: str, controls: Controls) -> tuple[Code, str] | None:
    """Why the controls leave *distribution*'s entry points out, if they do.

    ``<PREFIX>_BLOCK_PLUGINS`` wins over ``<PREFIX>_PLUGINS`` for the names it lists.
    """
    if controls.blocks(distribution):
        listed = ",".join(controls.block_as_written)
        return Code.BLOCKED, f"blocked by {controls.block_variable}={listed}"
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
        path = parse_entry_point_value(ep.value)
    except InvalidPathError as exc:
        return (
            Code.INVALID_VALUE,
            f"entry point value {ep.value!r} is invalid: {exc.reason}",
        ), None
    return None, path


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
        reason = f"{_UNREADABLE_REASON}: {dist.metadata_problem}"
        return "invalid", dist.metadata_problem.code, reason
    if requirement.code is not None:
        # An entry packaging cannot parse is the plugin's mistake (invalid); one the
        # installed host does not satisfy, a mismatch of releases (incompatible).
        invalid_entry = requirement.code is Code.INVALID_REQUIREMENT
        status: PluginStatus = "invalid" if invalid_entry else "incompatible"
        return status, requirement.code, requirement.reason
    if invalid is not None:
        return "invalid", *invalid
    return "used", None, None


def _folded(name: str) -> str:
    """*name* as one compares names that only look different: NFKC, then case-folded."""
    return unicodedata.normalize("NFKC", name).casefold()


def _findings(
    plugins: Sequence[PluginRecord],
    *,
    conflicts: Sequence[Conflict],
    undeclared: Sequence[PluginRecord],
    bad_requirement: set[str],
    group: str,
    host: str,
    controls: Controls,
    builtin_names: Sequence[str],
    host_version: str | None,
    unusable: Mapping[str, Problem],
) -> list[Finding]:
    findings: list[Finding] = []
    for p in plugins:
        if p.status == "invalid" and p.location in unusable:
            findings.append(
                Finding(
                    "unreadable-metadata",
                    p.name,
                    f"{p.origin_label} declares {p.name!r}, but {p.reason}",
                    _unusable_fix(p.location, p.distribution, unusable[p.location]),
                )
            )
        elif p.status == "invalid":
            fix = (
                f"fix the requirement on {host} in {p.distribution}'s dependencies "
                "([project] dependencies in its pyproject.toml) to a valid PEP 508 one"
                if p.distribution_key in bad_requirement
                else f"fix the entry point in {p.distribution}'s pyproject.toml "
                f'([project.entry-points.{group!r}]) to NAME = "module:Class"'
            )
            findings.append(
                Finding(
                    "invalid",
                    p.name,
                    f"{p.origin_label}: {p.reason}",
                    f"{fix}, or report it to its authors",
                )
            )
        elif p.status == "incompatible":
            unmet = check_host_requirement(p.requirements, host, host_version).failures
            wanted = f"pip install '{host}{','.join(f.specifier for f in unmet)}'"
            fix = f"install the {host} release {p.distribution} requires ({wanted})"
            if host_version is not None:
                fix = (
                    f"install a release of {p.distribution} that supports {host} {host_version} "
                    f"(pip install --upgrade {p.distribution}), or {fix}"
                )
            message = f"{p.origin_label} provides {p.name!r} but is incompatible: {p.reason}"
            findings.append(Finding("incompatible", p.name, message, fix))
    findings.extend(conflict_finding(conflict, group, controls) for conflict in conflicts)
    seen: set[str] = set()
    for p in undeclared:
        if p.distribution_key in seen:
            continue
        seen.add(p.distribution_key)
        findings.append(
            Finding(
                "undeclared-requirement",
                p.distribution,
                f"{p.origin_label} declares no requirement on {host}, so its compatibility "
                "cannot be checked",
                f"add {host!r} with a version range to {p.distribution}'s dependencies",
            )
        )
    folded = {_folded(n): n for n in builtin_names}
    for p in plugins:
        other = folded.get(_folded(p.name))
        if other is not None and other != p.name:
            how = (
                "only by case (names are case sensitive)"
                if p.name.casefold() == other.casefold()
                else "only by the width or form of its characters, such as fullwidth letters "
                "(names are compared as written)"
            )
            findings.append(
                Finding(
                    "case-collision",
                    p.name,
                    f"{p.origin_label} adds {p.name!r}, which differs from the built-in "
                    f"{other!r} {how}",
                    f"rename the entry point to {other!r} to override the built-in",
                )
            )
    return findings


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
    if controls.disable_plugins:
        # No entry-point discovery at all: the metadata is not even read.
        return DiscoveryResult(group, None, (), (), (), plugins_disabled=True)
    if records is None:
        records = scan_host(host, groups, controls.prefix)
    records = imported_first(
        only_testing_sites(records, host_key, controls.prefix), host_key, host_root
    )
    relevant = {r.key for r in records if any(ep.group == group for ep in r.entry_points)}
    dists, findings = deduplicate(records, relevant | {host_key}, (group, *sibling_groups))
    host_version = next((d.version for d in dists if d.key == host_key), None)

    typo_findings = [
        Finding(
            "typo-group",
            d.name,
            f"{d.name} declares entry points in group {ep.group!r}, which looks like a "
            f"typo of {group!r}; attn does not read it",
            f"rename the group to {group!r} in {d.name}'s pyproject.toml, then reinstall "
            f"{d.name} (pip install -e . in its checkout, or install the fixed release): the "
            "entry points attn reads are written at install time, so doctor reports this "
            "until the reinstall",
        )
        for d in dists
        for ep in {ep.group: ep for ep in d.entry_points}.values()
        if ep.group not in groups and looks_like_typo(ep.group, group)
    ]

    misgrouped = tuple(
        (ep.name, d.name if d.version is None else f"{d.name} {d.version}", ep.group)
        for d in dists
        for ep in d.entry_points
        if ep.group not in groups and looks_like_typo(ep.group, group)
    )

    plugins: list[PluginRecord] = []
    undeclared: list[PluginRecord] = []
    bad_requirement: set[str] = set()  # distributions invalid for their requirement on the host
    for dist in dists:
        eps = [ep for ep in dist.entry_points if ep.group == group]
        if not eps or dist.key == host_key:
            continue
        requirement = check_host_requirement(
            dist.metadata.requires if dist.metadata else (), host_key, host_version
        )
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
                undeclared.append(record)

    resolved, conflicts = resolve_conflicts(plugins, controls)
    # The host's plugin distributions: entry points in any of its groups.
    host_plugins = [
        d for d in dists if d.key != host_key and any(ep.group in groups for ep in d.entry_points)
    ]
    unreadable = unreadable_findings(records)
    found = [
        *findings,
        *unreadable,
        *typo_findings,
        *_findings(
            resolved,
            conflicts=conflicts,
            undeclared=undeclared,
            bad_requirement=bad_requirement,
            group=group,
            host=host_key,
            controls=controls,
            builtin_names=builtin_names,
            host_version=host_version,
            unusable={d.location: why for d in dists if (why := d.metadata_problem) is not None},
        ),
    ]
    # A name in <PREFIX>_PLUGINS or <PREFIX>_PREFER that matches no plugin is a typo, or a
    # list written another way ("a b", "a==1.0"): it would silently select or prefer nothing.
    plugin_keys = {d.key for d in host_plugins}
    valid = ", ".join(sorted(d.name for d in host_plugins)) or "(none installed)"
    named = [(controls.plugins_variable, w) for w in controls.only_as_written]
    named += [(controls.prefer_variable, w) for w in controls.prefer_as_written]
    found.extend(
        Finding(
            "unmatched-selection",
            written,
            f"{variable} names {written!r}, which is not an installed {host} plugin distribution",
            f"use one of: {valid}",
        )
        for variable, written in named
        if canonical_name(written) not in plugin_keys
    )
    ordered = tuple(sorted(resolved, key=lambda p: (p.name, _rank(p))))
    return DiscoveryResult(
        group,
        host_version,
        ordered,
        conflicts,
        tuple(found),
        plugins_disabled=False,
        misgrouped=misgrouped,
        unreadable=tuple(unreadable),
    )
