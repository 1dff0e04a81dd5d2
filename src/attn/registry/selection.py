"""Selection: the first candidate backend whose class loads and accepts the settings."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from attn import _fork

from .codes import Code
from .controls import exporting, shell_word
from .errors import SelectionError, UnknownBackendError, describe, passes_through, shown
from .loading import cleared_note, load, missing_of

if TYPE_CHECKING:
    from collections.abc import Hashable, Mapping

    from .loading import Registry

__all__ = ["Candidate", "Reason", "Selection", "dtype_name", "select"]
_TEXT = re.compile(r"(?!(?:true|false|null)$)[A-Za-z_][\w.:/+-]*").fullmatch  # never JSON
_JSON = json.JSONEncoder(  # what JSON cannot write: a numpy scalar's Python value, else the text
    separators=(",", ":"), default=lambda v: v.item() if type(v).__module__ == "numpy" else str(v)
).encode


def _words(registry: Registry, settings: Settings = ()) -> tuple[str, str, str]:
    """The explicit choice's variable (``ATTN_ATTENTION_BACKEND``), the noun, the select command."""
    config = registry._attn_state.config
    noun = "".join(c if c.isascii() and c.isalnum() else "_" for c in config.noun.upper())
    named = "" if config.where else f" {registry.__name__}"  # else --registry names it
    pairs = (f"{k}={v if type(v) is str and _TEXT(v) else _JSON(v)}" for k, v in settings)
    named += "".join(f" --set {shell_word(p)}" for p in pairs)  # as --set reads each back
    return f"{config.env_prefix}_{noun}", config.noun, config.command(f"select{named}")


def _token(registry: Registry) -> object:
    """An object replaced at every change of the table (runs discovery)."""
    registry._attn_state.ready()
    return registry._attn_state._layers.table  # the same until a discovery or registration


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a candidate was rejected: a code and the sentence shown for it."""

    code: Code
    message: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """One row of `Selection.tried`; ``fallback``: a built-in default after a rejected override."""

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
        source += ", built-in default after the override" if self.fallback else ""
        reasons = "; ".join(r.message for r in self.reasons)
        return f"{self.name} ({source}): {self.verdict}{': ' if reasons else ''}{reasons}"


Settings = tuple[tuple[str, "Hashable"], ...]


@dataclass(frozen=True, slots=True)
class Selection:
    """The backend chosen for one configuration, the class checked, and every candidate tried."""

    backend: Any
    """The chosen member, or plugin-added backend."""
    name: str
    explicit: bool
    tried: tuple[Candidate, ...]
    backend_class: type[Any]  # a class of the registry's interface: its methods type-check
    settings: Settings = ()

    def __str__(self) -> str:
        """The choice, then each candidate tried, one line each."""
        head = f"{self.name} chosen{' explicitly' * self.explicit} for {_shown(self.settings)}"
        head += " (its built-in default: the override was rejected)" * self.tried[-1].fallback
        return "\n".join([head + ":", *(f"  {row}" for row in self.tried)])


def dtype_name(dtype: object) -> str:
    """``"float16"`` for ``"float16"``, ``"torch.float16"`` and ``torch.float16`` (torch unused)."""
    return (dtype if isinstance(dtype, str) else str(dtype)).removeprefix("torch.")


def frozen(value: object, key: str) -> Hashable:
    """*value* as the checks receive it: lists as tuples, a dtype as its name."""
    if key == "dtype" and value is not None:
        return dtype_name(value)
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v, f"{key}[]") for v in value)
    if type(value).__hash__ is None:  # a dict or a set: it cannot be a cache key, nor held
        msg = f"setting {key.partition('[')[0]!r} holds a {type(value).__name__}: "
        msg += "settings must be hashable once lists are tuples (a tuple of pairs for a mapping)"
        raise TypeError(msg)
    return value


def _shown(settings: Settings) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in settings) or "no settings"


def _validation(cls: type, settings: Mapping[str, object]) -> list[Reason]:
    reasons = []
    try:
        if missing := missing_of(cls):
            listed = ", ".join(map(str, missing))
            reasons.append(Reason(Code.MISSING_REQUIREMENT, f"needs {listed}, not installed"))
        validate = getattr(cls, "validate_configuration", None)
        said = () if validate is None else validate(**settings)
        said = () if said is None else said  # a check that returns nothing found nothing
        a_list = isinstance(said, (list, tuple))  # no ==: a hostile metaclass may raise
        if odd := [s for s in said if not isinstance(s, str)] if a_list else [said]:
            wrong = f"validate_configuration must return a list of str; {shown(odd[0])} is a "
            return [*reasons, Reason(Code.VALIDATION_FAILED, f"{wrong}{shown(type(odd[0]))}")]
        said = [" ".join(s.split()) or "(its check gave an empty reason)" for s in said]  # one line
    except BaseException as exc:  # its result's repr() or type may raise too: a reason as well
        if passes_through(exc):
            raise
        return [*reasons, Reason(Code.VALIDATION_FAILED, f"its check raised {describe(exc)}")]
    return [*reasons, *(Reason(Code.INVALID_CONFIGURATION, s) for s in said)]


def _try(
    registry: Registry, name: str, settings: Mapping[str, object], retried: bool = False
) -> tuple[list[Candidate], type | None]:
    """The rows for *name*'s slot (its entry, then its default) and the chosen class, if any."""
    entry, default = registry._attn_state.lookup(name), registry._attn_defaults.get(name)
    sources = [entry] * (entry is not None) + [None] * (default is not None)
    if not sources:  # a member without a default (CUSTOM), or a name only a plugin adds
        from .discovery import rejections  # noqa: PLC0415 - as _unknown() says

        state, result = registry._attn_state, registry._attn_state.ensure()
        said = list(rejections(result, name, state.controls(), state.config.host))
        said = [cleared_note(registry.__name__, name)] if state.was_cleared(name) else said
        said = said or ["nothing is registered for it and it has no default"]
        off = f"plugins are disabled: unset {state.config.env_prefix}_DISABLE_PLUGINS to use them"
        said += [off] * result.plugins_disabled
        why = tuple(Reason(Code.UNREGISTERED, reason) for reason in said)
        builtin = name in registry._attn_defaults
        row = Candidate(name, "builtin" if builtin else "plugin", None, None, None, "rejected", why)
        return [row], None
    rows = []
    for source in sources:
        try:
            cls = load(registry, name, source)
        except Exception as exc:  # a load error is a reason (strict: raised); Ctrl-C passes
            if getattr(source, "origin", "") == "plugin" and registry._attn_state.controls().strict:
                raise  # strict mode: a plugin problem raises where it is found
            detail = getattr(exc, "detail", None) or describe(exc)
            reasons = [Reason(Code.LOAD_FAILURE, f"cannot be loaded: {detail}")]
        else:
            reasons = _validation(cls, settings)
        if source is entry and not retried and registry._attn_state.lookup(name) is not entry:
            return _try(registry, name, settings, retried=True)  # as get_class(): the new entry
        path = (default if source is None else source.path).dotted  # type: ignore[union-attr]
        dist, version = (getattr(source, k, None) for k in ("distribution", "version"))
        origin: Literal["builtin", "plugin", "runtime"] = getattr(source, "origin", "builtin")
        verdict: Literal["chosen", "rejected"] = "rejected" if reasons else "chosen"
        fallback = source is None and entry is not None
        rows.append(Candidate(name, origin, dist, version, path, verdict, tuple(reasons), fallback))
        if not reasons:
            return rows, cls
    return rows, None


def _choose(
    registry: Registry, explicit: str | None, settings: Settings, *, by_variable: bool
) -> Selection | SelectionError:
    values, (variable, noun, command) = dict(settings), _words(registry, settings)
    if explicit is not None:
        try:
            registry[explicit]  # the unknown-name error, with near matches
        except UnknownBackendError as exc:
            if by_variable:  # say so: the user may not know the variable is set
                exc.args = (f"{exc}\n{variable}={explicit!r} chose it: fix or unset it",)
            raise
        names = [explicit]
    else:
        names = registry.priorities(**values)  # type: ignore[attr-defined]
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            msg = f"{registry.__name__}.priorities() must return a list of names (str), not "
            raise TypeError(msg + shown(names))
        names = list(dict.fromkeys(map(str.__str__, names)))  # numpy.str_, a StrEnum: the text
        added = set(registry._attn_defaults).union(names)
        names += sorted(n for n in registry._attn_state.names() if n not in added)
    tried: list[Candidate] = []
    for name in names:
        rows, cls = _try(registry, name, values)
        tried += rows
        if cls is not None:
            return Selection(registry[name], name, bool(explicit), tuple(tried), cls, settings)
    where = f"{registry.__name__} for {_shown(settings)}"
    if explicit is not None:
        head = f"The {noun} {explicit!r} chosen explicitly is not valid in {where}:"
        unset = f", or unset {variable}; then" if by_variable else ";"  # else it chooses again
        fix = f"Choose another{unset} list the candidates with: {command[1:-1]}"  # unquoted
    elif tried:
        head = f"No {noun} of {where} is valid; tried in order:"
        fix = "Install a kernel package named above, or change the settings."
        if not any(r.code is Code.MISSING_REQUIREMENT for row in tried for r in row.reasons):
            fix = "Change the settings, or fix a candidate as its reasons above say."
    else:
        head, fix = f"No {noun} of {where} is a candidate.", "Check the settings or add a plugin."
    message = "\n".join([head, *(f"  {row}" for row in tried), fix])
    return SelectionError(message, registry.__name__, tuple(tried), explicit is not None)


_Key = tuple[object, bool, Settings, object]  # with the types: 1, 1.0, True, a str subclass
#: Per registry: its table's token and every result in order (under `_fork.LOCK`), unbounded
#: (a worker state records every choice); threads racing on a new key may choose twice, equally.
_CACHE: dict[Registry, tuple[object, dict[_Key, Selection | SelectionError]]] = {}


def _types(value: object) -> object:  # the type of each value: equal ones may differ in type
    return tuple(map(_types, value)) if type(value) is tuple else type(value)


def _results(registry: Registry, token: object) -> dict[_Key, Any]:
    if (held := _CACHE.get(registry)) is None or held[0] is not token:
        held = _CACHE[registry] = (token, {})
    return held[1]


def select(registry: Registry, /, backend: object = None, **settings: object) -> Selection:
    """Choose *registry*'s backend for *settings*: the first valid candidate, or *backend* alone.

    ``<PREFIX>_<NOUN>`` chooses when *backend* is not given; cached until the table changes.

    Raises:
        SelectionError: the explicit choice, or every candidate, is rejected.
        UnknownBackendError: the explicit choice names no backend.
    """
    by_env, named = backend is None, getattr(backend, "name", backend)  # by <PREFIX>_<NOUN>
    key = None if isinstance(backend, type) else getattr(backend, "_key", None)
    if callable(key) and (owned := key())[0] is not registry:  # another registry's: unknown
        named = f"{owned[0].__name__}.{owned[1]}"
    explicit = os.environ.get(_words(registry)[0], "").strip() or None if by_env else str(named)
    held = tuple(sorted((key, frozen(value, key)) for key, value in settings.items()))
    key = (explicit, by_env, held, _types(held))
    with _fork.LOCK:  # the token read here is current: a stale one would empty the cache
        found = _results(registry, token := _token(registry)).get(key)
    if found is None:
        found = _choose(registry, explicit, held, by_variable=by_env)
        with _fork.LOCK:
            if token is registry._attn_state._layers.table:  # else it changed: already stale
                _results(registry, token)[key] = found  # over one made inside it (re-entered)
    if isinstance(found, SelectionError):
        raise SelectionError(*found.args)
    return found


def _plain(value: object) -> bool:
    plain = type(value) in {str, int, float, bool, type(None)}
    return plain or (type(value) is tuple and all(map(_plain, value)))


@dataclass(frozen=True, slots=True)
class Recorded:
    """A selection the driver made, as plain data: ``path`` of the chosen class, rows as text."""

    settings: tuple[tuple[str, object], ...]
    name: str
    path: str | None
    explicit: str | None = None  # the name passed as backend=
    tried: tuple[str, ...] = ()
    variable: str | None = None  # the name <PREFIX>_<NOUN> chose


def recorded(registry: Registry) -> tuple[Recorded, ...]:
    """The selections (not rejections) cached for *registry*'s table whose settings are plain."""
    with _fork.LOCK:  # a current token, as select() reads it: a stale one empties the cache
        results = tuple(_results(registry, _token(registry)).items())
    return tuple(
        Recorded(s.settings, s.name, s.tried[-1].path, by[0], tuple(map(str, s.tried)), by[1])
        for (_, by_variable, *_), s in results
        if isinstance(s, Selection) and _plain(s.settings)
        for by in [(None, s.name if s.explicit else None) if by_variable else (s.name, None)]
    )


def reselect(registry: Registry, driver: Recorded) -> tuple[list[str], bool]:
    """Select as the driver's code would here: lines if the choice differs; if the variable does."""
    try:
        mine = select(registry, driver.explicit, **dict(driver.settings))
    except Exception as exc:  # noqa: BLE001 - no choice here is a difference, shown
        rows = tuple(map(str, getattr(exc, "tried", ())))
        worker = f"none ({type(exc).__name__})" + ("" if rows else f": {str(exc).splitlines()[0]}")
    else:
        if (mine.name, mine.tried[-1].path) == (driver.name, driver.path):
            return [], False
        worker, rows = f"{mine.name} ({mine.tried[-1].path})", tuple(map(str, mine.tried))
    arguments = [repr(driver.explicit)] if driver.explicit else []
    arguments += [f"{k}={v!r}" for k, v in driver.settings]
    variable = _words(registry)[0]
    chose = "" if driver.explicit else os.environ.get(variable, "").strip()  # as select() reads
    sides = [f"the driver's {variable}={driver.variable!r}"] if driver.variable else []
    sides += [f"the worker's {variable}={chose!r}"] if chose else []
    match = exporting(variable, driver.variable)  # as doctor writes a command to paste
    fix = f"    {' and '.join(sides)} chose it: set the same on every node (to match: {match})"
    cause = driver.variable != (chose or None)  # else the variable chose alike on both sides
    return [
        f"  {registry.__name__}.select({', '.join(arguments)})",
        f"    driver chose {driver.name} ({driver.path}):",
        *(f"      {row}" for row in driver.tried),
        f"    worker chose {worker}:" if rows else f"    worker chose {worker}",
        *(f"      {row}" for row in rows),
        *([fix] if cause else []),
    ], cause
