"""Selection: the backend of a registry for this machine and this configuration.

Candidates come in the host's order (the registry's ``priorities(**settings)``
classmethod, else `default_priorities()`), then every plugin-added name
not in it, sorted; an override keeps its name's slot, and when it is rejected
the built-in default of that name is tried next. The first candidate whose
class loads, whose ``requires`` are installed and whose
``validate_configuration(**settings)`` says nothing against it is chosen;
nothing after it is imported. docs/selection.md has the whole story.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from attn import _fork

from .errors import Code, SelectionError, describe, passes_through
from .loading import Registry, load

if TYPE_CHECKING:
    from collections.abc import Hashable, Mapping

    from .paths import ClassPath
    from .table import Entry


class _Registry(Registry, Protocol):
    """What selection reads of a registry class; the enum module imports this one."""

    def __getitem__(self, name: str, /) -> Any: ...  # noqa: ANN401 - a member or a plugin backend


BackendEnumMeta = _Registry

__all__ = [
    "Candidate",
    "Reason",
    "Selection",
    "default_priorities",
    "dtype_name",
    "select",
]

# -- the registry internals selection reads: this section only -----------------------


def _entry(registry: BackendEnumMeta, name: str) -> Entry | None:
    """The table's entry for *name* (a plugin's or a runtime registration), if any."""
    return registry._attn_state.lookup(name)


def _default(registry: BackendEnumMeta, name: str) -> ClassPath | None:
    """The built-in default path of *name*; ``None`` for CUSTOM and plugin-added names."""
    return registry._attn_defaults.get(name)


def _builtin_names(registry: BackendEnumMeta) -> list[str]:
    """The registry's members, in enum order."""
    return list(registry._attn_defaults)


def _table_names(registry: BackendEnumMeta) -> tuple[str, ...]:
    """Every name the table has an entry for (runs discovery)."""
    return registry._attn_state.names()


def _token(registry: BackendEnumMeta) -> object:
    """An object replaced at every change of the table: discovery, refresh, registration."""
    state = registry._attn_state
    state.ready()
    return state._layers


def _words(registry: BackendEnumMeta) -> tuple[str, str, str]:
    """The explicit choice's variable (``ATTN_ATTENTION_BACKEND``), the noun, the host's command."""
    config = registry._attn_state.config
    variable = f"{config.env_prefix}_{config.noun.upper().replace(' ', '_')}"
    return variable, config.noun, config.host


def _load(registry: BackendEnumMeta, name: str, path: ClassPath, entry: Entry | None) -> type:
    """Import *path* as *name*'s class, checked against the interface (a load error if not)."""
    del path  # the entry's, or the default's when *entry* is None: the one load path knows
    return load(registry, name, entry)


# -- records ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a candidate was rejected: a code and the sentence shown for it."""

    code: Code
    message: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """One row of `Selection.tried`: a class tried for a name, and the verdict.

    ``fallback`` is true on the row of a built-in default tried because the
    override of the same name, on the row before, was rejected.
    """

    name: str
    origin: Literal["builtin", "plugin", "runtime"]
    distribution: str | None
    version: str | None
    path: str | None
    verdict: Literal["chosen", "rejected"]
    reasons: tuple[Reason, ...] = ()
    fallback: bool = False

    def __str__(self) -> str:
        """``NAME (origin[, distribution version]): chosen | rejected: reasons``."""
        source = " ".join(filter(None, (self.origin, self.distribution, self.version)))
        if self.fallback:
            source += ", built-in default after the override"
        reasons = "; ".join(r.message for r in self.reasons)
        return f"{self.name} ({source}): {self.verdict}{': ' if reasons else ''}{reasons}"


Settings = tuple[tuple[str, "Hashable"], ...]


@dataclass(frozen=True, slots=True)
class Selection:
    """The backend chosen for one configuration, and every candidate tried for it.

    ``backend_class`` is the class that was checked. It is
    ``backend.get_class()`` except after a rejected override, when the
    built-in default of that name was chosen (the last row's ``fallback``).
    """

    backend: Any
    """The chosen member, or plugin-added backend."""
    name: str
    explicit: bool
    tried: tuple[Candidate, ...]
    backend_class: type
    settings: Settings = ()

    def __str__(self) -> str:
        """The choice, then each candidate tried, one line each."""
        chosen = self.tried[-1]
        how = "chosen explicitly" if self.explicit else "chosen"
        head = f"{self.name} {how} for {_shown(self.settings)}"
        if chosen.fallback:
            head += " (its built-in default: the override was rejected)"
        return "\n".join([head + ":", *(f"  {row}" for row in self.tried)])


# -- settings -----------------------------------------------------------------------------


def dtype_name(dtype: object) -> str:
    """``"float16"`` for ``"float16"``, ``"torch.float16"`` and ``torch.float16`` (torch unused)."""
    text = dtype if isinstance(dtype, str) else str(dtype)
    return text.removeprefix("torch.")


def _frozen(value: object) -> Hashable:
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    hash(value)  # TypeError for an unhashable value: it cannot be a cache key
    return value


def _settings(settings: Mapping[str, object]) -> Settings:
    """The hashable form of *settings*: sorted, lists as tuples, ``dtype`` as its name."""
    return tuple(
        sorted(
            (key, dtype_name(value) if key == "dtype" and value is not None else _frozen(value))
            for key, value in settings.items()
        )
    )


def _shown(settings: Settings) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in settings) or "no settings"


# -- choosing -----------------------------------------------------------------------------


def default_priorities(registry: BackendEnumMeta, **settings: object) -> list[str]:  # noqa: ARG001
    """Every built-in in enum order; a member without a default (CUSTOM) only when registered."""
    names = _builtin_names(registry)
    return [n for n in names if _default(registry, n) is not None or _entry(registry, n)]


def _validation(cls: type, settings: Mapping[str, object]) -> list[Reason]:
    """What the class says against *settings*: its missing packages, its own reasons."""
    reasons = []
    try:
        missing = cls.missing_requirements() if hasattr(cls, "missing_requirements") else ()
        if missing:
            listed = ", ".join(map(str, missing))
            reasons.append(Reason(Code.MISSING_REQUIREMENT, f"needs {listed}, not installed"))
        validate = getattr(cls, "validate_configuration", None)
        said = [] if validate is None else validate(**settings)
    except BaseException as exc:
        if passes_through(exc):
            raise
        return [*reasons, Reason(Code.VALIDATION_FAILED, f"its check raised {describe(exc)}")]
    if type(said) is not list or any(type(s) is not str for s in said):
        shown = f"validate_configuration returned {type(said).__name__}, not a list of str"
        return [*reasons, Reason(Code.VALIDATION_FAILED, shown)]
    return [*reasons, *(Reason(Code.INVALID_CONFIGURATION, s) for s in said)]


def _try(
    registry: BackendEnumMeta, name: str, settings: Mapping[str, object]
) -> tuple[list[Candidate], type | None]:
    """The rows for *name*'s slot and the chosen class, if one is valid."""
    entry = _entry(registry, name)
    default = _default(registry, name)
    paths: list[tuple[ClassPath, Entry | None]] = [] if entry is None else [(entry.path, entry)]
    if default is not None:
        paths.append((default, None))
    if not paths:
        reason = Reason(Code.UNREGISTERED, "nothing is registered for it and it has no default")
        return [Candidate(name, "builtin", None, None, None, "rejected", (reason,))], None
    rows = []
    for path, source in paths:
        try:
            cls = _load(registry, name, path, source)
        except Exception as exc:  # noqa: BLE001 - a load error is a reason; Ctrl-C passes
            detail = getattr(exc, "detail", None) or describe(exc)
            reasons = [Reason(Code.LOAD_FAILURE, f"cannot be loaded: {detail}")]
        else:
            reasons = _validation(cls, settings)
        rows.append(
            Candidate(
                name,
                "builtin" if source is None else source.origin,
                None if source is None else source.distribution,
                None if source is None else source.version,
                path.dotted,
                "rejected" if reasons else "chosen",
                tuple(reasons),
                fallback=source is None and entry is not None,
            )
        )
        if not reasons:
            return rows, cls
    return rows, None


def _choose(
    registry: BackendEnumMeta, explicit: str | None, settings: Settings
) -> Selection | SelectionError:
    values = dict(settings)
    if explicit is not None:
        registry[explicit]  # the unknown-name error, with near matches
        names = [explicit]
    else:
        host = getattr(registry, "priorities", None)
        names = list(
            dict.fromkeys(
                default_priorities(registry, **values) if host is None else host(**values)
            )
        )
        builtins = set(_builtin_names(registry))
        names += sorted(n for n in _table_names(registry) if n not in builtins and n not in names)
    tried: list[Candidate] = []
    for name in names:
        rows, cls = _try(registry, name, values)
        tried += rows
        if cls is not None:
            return Selection(
                registry[name], name, explicit is not None, tuple(tried), cls, settings
            )
    return _failure(registry, explicit, settings, tuple(tried))


def _failure(
    registry: BackendEnumMeta,
    explicit: str | None,
    settings: Settings,
    tried: tuple[Candidate, ...],
) -> SelectionError:
    variable, noun, host = _words(registry)
    where = f"{registry.__name__} for {_shown(settings)}"
    if explicit is not None:
        head = f"The {noun} {explicit!r} chosen explicitly is not valid in {where}:"
        fix = (
            f"Choose another (or unset {variable}); "
            f"'{host} select {registry.__name__}' lists the candidates."
        )
    elif tried:
        head = f"No {noun} of {where} is valid; tried in order:"
        fix = "Install a kernel package named above, or change the settings."
    else:
        head, fix = f"No {noun} of {where} is a candidate.", "Install a plugin that provides one."
    lines = [head, *(f"  {row}" for row in tried), fix]
    return SelectionError("\n".join(lines), registry.__name__, tried, explicit is not None)


#: How many results (choices and rejections) the cache keeps per registry; beyond it, the
#: least recently used is dropped (and chosen again when asked for again).
CACHE_SIZE = 128

_Key = tuple[object, Settings]
#: Per registry: the table token its results were made with, and the results by key, the
#: least recently used first. The registries' lock (`attn._fork.LOCK`, which a fork
#: waits for) guards every read and write; choosing runs outside it, so threads that race
#: on a new key at worst choose twice, with equal results.
_CACHE: dict[BackendEnumMeta, tuple[object, OrderedDict[_Key, Selection | SelectionError]]] = {}


def _cached(
    registry: BackendEnumMeta, token: object, key: _Key
) -> Selection | SelectionError | None:
    with _fork.LOCK:
        held = _CACHE.get(registry)
        if held is None or held[0] is not token or key not in held[1]:
            return None
        held[1].move_to_end(key)
        return held[1][key]


def _keep(
    registry: BackendEnumMeta, token: object, key: _Key, result: Selection | SelectionError
) -> None:
    with _fork.LOCK:
        if token is not registry._attn_state._layers:
            return  # the table changed while choosing: the result is already stale
        held = _CACHE.get(registry)
        if held is None or held[0] is not token:
            held = _CACHE[registry] = (token, OrderedDict())
        held[1][key] = result
        held[1].move_to_end(key)
        while len(held[1]) > CACHE_SIZE:
            held[1].popitem(last=False)


def select(registry: BackendEnumMeta, /, backend: object = None, **settings: object) -> Selection:
    """Choose *registry*'s backend for *settings* (see the module's docstring).

    *backend* (a name, member or plugin-added backend) is an explicit choice,
    tried alone; without it, the variable ``<PREFIX>_<NOUN>`` is one when set.
    The result is cached per settings (`CACHE_SIZE` of them per registry)
    until the registry's table changes.

    Raises:
        SelectionError: the explicit choice, or every candidate, is rejected.
        UnknownBackendError: the explicit choice names no backend.
    """
    variable, _, _ = _words(registry)
    explicit = getattr(backend, "name", backend) if backend is not None else None
    explicit = explicit if explicit is not None else os.environ.get(variable) or None
    key = (explicit, _settings(settings))
    token = _token(registry)
    found = _cached(registry, token, key)
    if found is None:
        found = _choose(registry, None if explicit is None else str(explicit), key[1])
        _keep(registry, token, key, found)
    if isinstance(found, SelectionError):
        raise SelectionError(*found.args)
    return found


def made(registry: BackendEnumMeta) -> tuple[Selection, ...]:
    """The selections in *registry*'s cache for its current table, least recently used first.

    Runs discovery unless it has run; rejections are left out.
    """
    token = _token(registry)
    with _fork.LOCK:
        held = _CACHE.get(registry)
        results = () if held is None or held[0] is not token else tuple(held[1].values())
    return tuple(r for r in results if isinstance(r, Selection))


# -- workers: the driver's selections as data, chosen again -------------------------------

_PLAIN = (str, int, float, bool, type(None))


def _plain(value: object) -> bool:
    """Whether *value* is data a state may hold: text, numbers, ``None``, tuples of them."""
    if type(value) is tuple:
        return all(_plain(v) for v in value)
    return type(value) in _PLAIN


@dataclass(frozen=True, slots=True)
class Recorded:
    """A selection the driver made, as plain data: what a worker state holds of it.

    ``explicit`` is the name chosen explicitly, ``None`` when the priorities
    decided; ``path`` the chosen class's dotted path; ``tried`` the rows as
    `Selection` shows them.
    """

    settings: tuple[tuple[str, object], ...]
    name: str
    path: str | None
    explicit: str | None = None
    tried: tuple[str, ...] = ()


def recorded(registry: BackendEnumMeta) -> tuple[Recorded, ...]:
    """`made()` as data; a selection whose settings hold other objects is left out."""
    return tuple(
        Recorded(
            s.settings,
            s.name,
            s.tried[-1].path,
            s.name if s.explicit else None,
            tuple(map(str, s.tried)),
        )
        for s in made(registry)
        if _plain(s.settings)
    )


def _call(registry: BackendEnumMeta, settings: Settings, explicit: str | None) -> str:
    parts = [f"{k}={v!r}" for k, v in settings]
    return (
        f"{registry.__name__}.select({', '.join([repr(explicit), *parts] if explicit else parts)})"
    )


def reselect(registry: BackendEnumMeta, driver: Recorded) -> list[str]:
    """Select again as the driver did; the lines of the difference, if the choice differs.

    Each side shows its choice (class path), then the rows it tried with their reasons.
    """
    try:
        mine = select(registry, driver.explicit, **dict(driver.settings))
    except Exception as exc:  # noqa: BLE001 - no choice here is a difference, shown
        rows = tuple(map(str, getattr(exc, "tried", ())))
        worker = f"none ({type(exc).__name__})" + ("" if rows else f": {str(exc).splitlines()[0]}")
    else:
        if (mine.name, mine.tried[-1].path) == (driver.name, driver.path):
            return []
        worker, rows = f"{mine.name} ({mine.tried[-1].path})", tuple(map(str, mine.tried))
    return [
        f"  {_call(registry, driver.settings, driver.explicit)}",
        f"    driver chose {driver.name} ({driver.path}):",
        *(f"      {row}" for row in driver.tried),
        f"    worker chose {worker}:" if rows else f"    worker chose {worker}",
        *(f"      {row}" for row in rows),
    ]
