"""The environment variables that steer discovery (``ATTN_*`` for attn)."""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING

from .errors import AttnConfigError, Record

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

#: Private switch for tests, per host: ``reference`` reads through `importlib.metadata`.
READER_VARIABLE = "{prefix}_READER"
#: Private, per host, set by `attn.testing`: the only folders whose plugins discovery keeps.
TESTING_SITES_VARIABLE = "_{prefix}_TESTING_SITES"
#: The newest Python on which the tests compare the fast reader with `importlib.metadata`.
NEWEST_COVERED = (3, 13)

_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off", ""})


def canonical_name(name: str) -> str:
    """Normalize a distribution name as pip does (PEP 503); most need no regular expression."""
    key = name.replace("_", "-").replace(".", "-").lower()  # then lower(), as PEP 503
    return re.sub("-+", "-", key) if "--" in key else key


def shell_word(text: str) -> str:
    """*text* as a shell reads it back: as written when a shell passes it so, else quoted."""
    plain = re.fullmatch(r"[\w@%+=:,./-]*", text)  # [ ] quoted: zsh globs them
    return text if plain else "'" + text.replace("'", "'\"'\"'") + "'"  # as shlex.quote does


def exporting(variable: str, value: str | None) -> str:
    """The shell command that sets *variable* to *value*: ``unset`` when there is none."""
    return f"export {variable}={shell_word(value)}" if value else f"unset {variable}"


def control_values(prefix: str) -> tuple[tuple[str, str | None], ...]:
    """The ``<PREFIX>_*`` controls that change what a registry resolves to, and their values."""
    names = (f"{prefix}_{c}" for c in ("DISABLE_PLUGINS", "PLUGINS", "BLOCK_PLUGINS", "PREFER"))
    return tuple((name, os.environ.get(name)) for name in names)


def reader(prefix: str = "ATTN", env: Mapping[str, str] = os.environ) -> str:
    """``fast``, unless ``<PREFIX>_READER=reference`` or Python is newer than `NEWEST_COVERED`."""
    variable = READER_VARIABLE.format(prefix=prefix)
    value = (written := env.get(variable, "")).strip().lower() or "fast"
    if value not in {"fast", "reference"}:
        raise AttnConfigError(variable, written, "fast or reference")  # as set, like the flags
    return value if sys.version_info[:2] <= NEWEST_COVERED else "reference"


def standard_finders(*, backport: bool = False) -> bool:
    """Whether only the standard path finder (*backport*: or the backport's) gives distributions."""
    path_finder = getattr(sys.modules.get("_frozen_importlib_external"), "PathFinder", None)
    other = backport and getattr(sys.modules.get("importlib_metadata"), "MetadataPathFinder", None)
    finders = (f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None)
    return all(finder is path_finder or type(finder) is other for finder in finders)


def parse_bool(variable: str, value: str | None) -> bool:
    """Read a boolean variable: ``1/true/yes/on``, or ``0/false/no/off``, empty or unset."""
    if (word := (value or "").strip().lower()) in _TRUE or word in _FALSE:
        return word in _TRUE
    raise AttnConfigError(variable, value or "", "one of 1, true, yes, on, 0, false, no, off")


class _Settings(Record):  # a record's body declares fields only (as a NamedTuple's)
    prefix: str
    disable_plugins: bool = False
    only: tuple[str, ...] | None = None  # None when <PREFIX>_PLUGINS is unset (or empty)
    only_as_written: tuple[str, ...] = ()
    strict: bool = False
    prefer: tuple[str, ...] = ()  # most preferred first
    prefer_as_written: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    block_as_written: tuple[str, ...] = ()
    no_cache: bool = False
    reader: str = "fast"  # what reader() says for the host's <PREFIX>_READER
    testing_sites: str | None = None  # TESTING_SITES_VARIABLE, as set


class Controls(_Settings):
    """The discovery controls in effect: each list as canonical names, and as written."""

    __slots__ = ()

    disable_variable = property(lambda c: f"{c.prefix}_DISABLE_PLUGINS")
    plugins_variable = property(lambda c: f"{c.prefix}_PLUGINS")
    prefer_variable = property(lambda c: f"{c.prefix}_PREFER")
    block_variable = property(lambda c: f"{c.prefix}_BLOCK_PLUGINS")
    strict_variable = property(lambda c: f"{c.prefix}_STRICT")
    no_cache_variable = property(lambda c: f"{c.prefix}_NO_CACHE")

    def preference(self, distribution: str) -> int:
        """Where *distribution* stands in ``<PREFIX>_PREFER`` (unlisted: after every listed one)."""
        key = canonical_name(distribution)
        return self.prefer.index(key) if key in self.prefer else len(self.prefer)

    def blocks(self, distribution: str) -> bool:
        """Whether ``<PREFIX>_BLOCK_PLUGINS`` names *distribution*."""
        return canonical_name(distribution) in self.block

    def selects(self, distribution: str) -> bool:
        """Whether ``<PREFIX>_PLUGINS`` is unset or names *distribution*."""
        return self.only is None or canonical_name(distribution) in self.only

    def leaves_out(self, distribution: str) -> bool:
        """Whether the controls keep *distribution* out: disabled, blocked, or not selected."""
        return self.disable_plugins or self.blocks(distribution) or not self.selects(distribution)

    def adding(self, *names: str, prefer: bool = False) -> str:
        """``export <PREFIX>_BLOCK_PLUGINS=...`` (or ``_PREFER``): the names now, then *names*."""
        now = self.prefer_as_written if prefer else self.block_as_written
        more = [n for n in names if canonical_name(n) not in set(map(canonical_name, now))]
        variable = self.prefer_variable if prefer else self.block_variable
        return exporting(variable, ",".join([*now, *more]))

    def letting_in(self, distribution: str, bad: Collection[str] = ()) -> str:
        """What to set (or unset) to let *distribution* in, leaving out the *bad* names."""
        fixes, key = [], canonical_name(distribution)
        if self.blocks(distribution):
            rest = ",".join(n for n in self.block_as_written if canonical_name(n) != key)
            fixes.append(exporting(self.block_variable, rest))
        if not self.selects(distribution):
            only = ",".join([*(n for n in self.only_as_written if n not in bad), distribution])
            fixes.append(exporting(self.plugins_variable, only))
        return " and ".join(fixes)

    def to_json(self) -> dict[str, object]:
        """The controls in effect, as ``attn list --json`` reports them."""
        return {
            self.disable_variable: self.disable_plugins,
            self.plugins_variable: None if self.only is None else list(self.only_as_written),
            self.prefer_variable: list(self.prefer_as_written),
            self.block_variable: list(self.block_as_written),
            self.strict_variable: self.strict,
        }


def read_controls(prefix: str, env: Mapping[str, str] = os.environ) -> Controls:
    """Read the ``<PREFIX>_*`` controls (`AttnConfigError` for a bad flag or reader value)."""

    def names(suffix: str) -> tuple[tuple[str, ...], tuple[str, ...]]:  # canonical, once each
        written = tuple(filter(None, map(str.strip, env.get(f"{prefix}_{suffix}", "").split(","))))
        return tuple(dict.fromkeys(map(canonical_name, written))), written

    (only, written), prefer, block = map(names, ("PLUGINS", "PREFER", "BLOCK_PLUGINS"))
    flags = (f"{prefix}_DISABLE_PLUGINS", f"{prefix}_STRICT", f"{prefix}_NO_CACHE")
    disable, strict, no_cache = (parse_bool(variable, env.get(variable)) for variable in flags)
    kind = reader(prefix, env)  # read here, so a bad value is an error with plugins disabled too
    listed = (only or None, written, strict, *prefer, *block, no_cache, kind)
    return Controls(prefix, disable, *listed, env.get(TESTING_SITES_VARIABLE.format(prefix=prefix)))
