"""The message of a worker's `StateMismatchError`: what differs from the driver, what to do."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .errors import StateMismatchError
from .paths import parse_path

if TYPE_CHECKING:
    from collections.abc import Iterable


@dataclass(frozen=True, slots=True)
class BackendResolution:
    """What one name of a registry resolves to in one process (``path``: ``module:QualName``)."""

    __module__ = "attn.registry.workers"  # where states have always pickled it from

    name: str
    origin: str  # builtin, plugin or runtime
    path: str | None  # None for an unregistered member
    distribution: str | None = None
    version: str | None = None


class CapturedRegistry(Protocol):
    """What the message reads of a `attn.registry.workers.CapturedRegistry` (no import cycle)."""

    @property
    def registry(self) -> str: ...
    @property
    def location(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def env_prefix(self) -> str: ...
    @property
    def backends(self) -> tuple[BackendResolution, ...]: ...
    @property
    def controls(self) -> tuple[tuple[str, str | None], ...]: ...


def control_values(prefix: str) -> tuple[tuple[str, str | None], ...]:
    """The ``<PREFIX>_*`` controls that change what a registry resolves to, and their values."""
    names = (f"{prefix}_{c}" for c in ("DISABLE_PLUGINS", "PLUGINS", "BLOCK_PLUGINS", "PREFER"))
    return tuple((name, os.environ.get(name)) for name in names)


def mismatch(
    pairs: Iterable[tuple[CapturedRegistry, tuple[BackendResolution, ...] | None, str]],
    chose: Iterable[tuple[str, list[str]]] = (),
) -> StateMismatchError | None:
    """The error, if any, for (driver's registry, rows here or None, why) and differing *chose*."""
    chose = list(chose)
    lines: list[str] = []
    differing: list[tuple[str, str]] = []
    missing: list[CapturedRegistry] = []
    commands: list[str] = []
    unpreferable = False  # a difference that no preference among plugins explains
    differ: dict[str, tuple[str | None, str | None]] = {}
    selecting: dict[str, None] = {}  # <PREFIX>_PLUGINS of each registry that differs
    for driver, rows, problem in pairs:
        if rows is None:
            missing.append(driver)
            head = f"{driver.registry} ({driver.location}, group {driver.group!r})"
            lines += [f"  {head}", "    driver: declared", f"    worker: absent: {problem}"]
            continue
        theirs, mine = {b.name: b for b in driver.backends}, {b.name: b for b in rows}
        found = [n for n in dict.fromkeys([*theirs, *mine]) if theirs.get(n) != mine.get(n)]
        for name in found:
            sides = theirs.get(name), mine.get(name)
            differing.append((driver.registry, name))
            lines.append(f"  {driver.registry}.{name}")
            lines += [f"    driver: {_described(sides[0])}", f"    worker: {_described(sides[1])}"]
            commands += _commands(*sides)
            unpreferable = unpreferable or any(b is None or b.origin != "plugin" for b in sides)
        if found:
            selecting[f"{driver.env_prefix}_PLUGINS"] = None
            here = dict(control_values(driver.env_prefix))
            differ.update(
                (v, (value, here.get(v))) for v, value in driver.controls if here.get(v) != value
            )
    if not lines and not chose:
        return None
    out = ["The backends in this process differ from the driver's:", *lines] if lines else []
    if chose:
        out.append("The selections in this process differ from the driver's:")
        out += [line for _, shown in chose for line in shown]
    out += [
        f"{v} is {_shown(theirs)} in the driver and {_shown(mine)} here"
        for v, (theirs, mine) in differ.items()
    ]
    fixes = [_plugin_fix(commands, list(differ), [*selecting], unpreferable)] if differing else []
    if missing:
        hosts = ", ".join(dict.fromkeys(r.host for r in missing))
        fixes.append(
            f"install the same version of {hosts} on every node, and declare registries in "
            "modules that workers import"
        )
    if chose:
        fixes.append(
            "install the same kernel packages on every node (a rejection above names "
            "what is missing), or pass settings that hold on every node"
        )
    out.append("To fix it, " + "; ".join(fixes) + ".")
    return StateMismatchError(
        "\n".join(out),
        differences=tuple(differing),
        missing_registries=tuple(r.registry for r in missing),
        selections=tuple(dict.fromkeys(registry for registry, _ in chose)),
    )


def _plugin_fix(
    commands: list[str], controls: list[str], selecting: list[str], unpreferable: bool
) -> str:
    install = "install the same plugin versions on every node"
    if commands:
        install += f" (here: {'; '.join(dict.fromkeys(commands))})"
    same = f"set the same {' and '.join(controls or selecting)} in every process"
    if not controls:  # the plugins every process uses can also be named alike
        return f"{install}, or {same}"
    if unpreferable and all(v.endswith("_PREFER") for v in controls):
        # A preference only picks among installed plugins: it cannot bring a missing one.
        return f"{install}, and {same}"
    return f"{same}, or {install}"


def _described(row: BackendResolution | None) -> str:
    if row is None:
        return "absent"
    if row.path is None:
        return "unregistered (no default, nothing registered)"
    label = row.distribution or "an unknown distribution"
    if row.version is not None:
        label += f" {row.version}"
    where = {"plugin": f"plugin {label}", "runtime": "runtime registration"}
    return f"{parse_path(row.path).dotted} ({where.get(row.origin, 'built-in')})"


def _commands(theirs: BackendResolution | None, mine: BackendResolution | None) -> list[str]:
    """The pip commands that would make this side match the driver's."""
    commands = []
    if theirs and theirs.origin == "plugin" and theirs.distribution:
        pin = "" if theirs.version is None else f"=={theirs.version}"
        commands.append(f"pip install '{theirs.distribution}{pin}'")
    mine_dist = mine.distribution if mine and mine.origin == "plugin" else None
    if mine_dist and mine_dist != (theirs and theirs.distribution):
        commands.append(f"pip uninstall {mine_dist}")
    return commands


def _shown(value: str | None) -> str:
    return "unset" if value is None else repr(value)
