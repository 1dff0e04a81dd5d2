"""The environment variables that steer discovery (``ATTN_*`` for attn)."""

from __future__ import annotations

import os

from ._metadata import canonical_name
from ._records import Record, set_field
from .errors import AttnConfigError

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Controls", "parse_bool", "read_controls"]

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def parse_bool(variable: str, value: str | None) -> bool:
    """Read a boolean variable: ``1/true/yes/on`` or ``0/false/no/off`` or empty.

    Raises:
        AttnConfigError: any other value, naming the variable.
    """
    if value is None:
        return False
    folded = value.strip().lower()
    if folded in _TRUE:
        return True
    if folded in _FALSE:
        return False
    raise AttnConfigError(variable, value, "one of 1, true, yes, on, 0, false, no, off")


class Controls(Record):
    """The discovery controls in effect, read from the environment."""

    __slots__ = (
        "disable_plugins",
        "only",
        "only_as_written",
        "prefer",
        "prefer_as_written",
        "prefix",
        "strict",
    )

    prefix: str
    disable_plugins: bool
    only: tuple[str, ...] | None
    """Canonical distribution names of ``<PREFIX>_PLUGINS``; ``None`` when unset."""
    only_as_written: tuple[str, ...]
    strict: bool
    prefer: tuple[str, ...]
    """Canonical distribution names of ``<PREFIX>_PREFER``, most preferred first."""
    prefer_as_written: tuple[str, ...]

    def __init__(
        self,
        *,
        prefix: str,
        disable_plugins: bool,
        only: tuple[str, ...] | None,
        only_as_written: tuple[str, ...],
        strict: bool,
        prefer: tuple[str, ...] = (),
        prefer_as_written: tuple[str, ...] = (),
    ) -> None:
        """Hold the controls read by :func:`read_controls`."""
        set_field(self, "prefer", prefer)
        set_field(self, "prefer_as_written", prefer_as_written)
        set_field(self, "prefix", prefix)
        set_field(self, "disable_plugins", disable_plugins)
        set_field(self, "only", only)
        set_field(self, "only_as_written", only_as_written)
        set_field(self, "strict", strict)

    @property
    def disable_variable(self) -> str:
        """Name of the variable that turns discovery off."""
        return f"{self.prefix}_DISABLE_PLUGINS"

    @property
    def plugins_variable(self) -> str:
        """Name of the variable that selects distributions."""
        return f"{self.prefix}_PLUGINS"

    @property
    def prefer_variable(self) -> str:
        """Name of the variable that orders claimants in conflicts."""
        return f"{self.prefix}_PREFER"

    def preference(self, distribution: str) -> int:
        """Where *distribution* stands in ``<PREFIX>_PREFER`` (unlisted: after every listed one)."""
        key = canonical_name(distribution)
        return self.prefer.index(key) if key in self.prefer else len(self.prefer)

    def to_json(self) -> dict[str, object]:
        """The controls in effect, as ``attn list --json`` reports them."""
        return {
            self.disable_variable: self.disable_plugins,
            self.plugins_variable: None if self.only is None else list(self.only_as_written),
            self.prefer_variable: list(self.prefer_as_written),
            self.strict_variable: self.strict,
        }

    @property
    def strict_variable(self) -> str:
        """Name of the variable that turns plugin problems into errors."""
        return f"{self.prefix}_STRICT"

    def allows(self, distribution: str) -> bool:
        """Whether *distribution*'s entry points may be merged."""
        return self.only is None or canonical_name(distribution) in self.only


def read_controls(prefix: str, environ: Mapping[str, str] | None = None) -> Controls:
    """Read ``<PREFIX>_DISABLE_PLUGINS``, ``_PLUGINS``, ``_PREFER`` and ``_STRICT``.

    Raises:
        AttnConfigError: a boolean variable has a value that is not a boolean.
    """
    env = os.environ if environ is None else environ
    disable = parse_bool(f"{prefix}_DISABLE_PLUGINS", env.get(f"{prefix}_DISABLE_PLUGINS"))
    strict = parse_bool(f"{prefix}_STRICT", env.get(f"{prefix}_STRICT"))
    raw = env.get(f"{prefix}_PLUGINS", "")
    written = tuple(part.strip() for part in raw.split(",") if part.strip())
    only = tuple(dict.fromkeys(canonical_name(n) for n in written)) if written else None
    preferred = tuple(
        part.strip() for part in env.get(f"{prefix}_PREFER", "").split(",") if part.strip()
    )
    return Controls(
        prefix=prefix,
        disable_plugins=disable,
        only=only,
        only_as_written=written,
        strict=strict,
        prefer=tuple(dict.fromkeys(canonical_name(n) for n in preferred)),
        prefer_as_written=preferred,
    )
