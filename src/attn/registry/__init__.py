"""The host-agnostic core of attn: a host declares a `BackendEnum`, plugins come for free."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from attn import _fork

from .enum import BackendEnum, PluginBackend, register
from .errors import (
    AttnConfigError,
    AttnError,
    AttnWarning,
    BackendInterfaceError,
    BackendLoadError,
    BackendNotRegisteredError,
    ConflictWarning,
    InvalidPathError,
    PluginProblemError,
    PluginWarning,
    RejectedPluginWarning,
    SelectionError,
    StateMismatchError,
    UnknownBackendError,
)
from .loading import Backend

if TYPE_CHECKING:
    from .codes import Code
    from .listing import build_report, diagnose
    from .selection import Candidate, Reason, Selection
    from .workers import WorkerState, apply_state, capture_state, ray_setup_hook

_LAZY = {  # listing, selection, workers and the codes load on first use: a lookup needs none
    "Code": "codes",
    **dict.fromkeys(("Candidate", "Reason", "Selection"), "selection"),
    **dict.fromkeys(("build_report", "diagnose"), "listing"),
    **dict.fromkeys(("WorkerState", "apply_state", "capture_state", "ray_setup_hook"), "workers"),
}

__all__ = [
    "AttnConfigError",
    "AttnError",
    "AttnWarning",
    "Backend",
    "BackendEnum",
    "BackendInterfaceError",
    "BackendLoadError",
    "BackendNotRegisteredError",
    "Candidate",
    "Code",
    "ConflictWarning",
    "InvalidPathError",
    "PluginBackend",
    "PluginProblemError",
    "PluginWarning",
    "Reason",
    "RejectedPluginWarning",
    "Selection",
    "SelectionError",
    "StateMismatchError",
    "UnknownBackendError",
    "WorkerState",
    "apply_state",
    "build_report",
    "capture_state",
    "diagnose",
    "ray_setup_hook",
    "register",
]


def __getattr__(name: str) -> object:
    if (module := _LAZY.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _fork.importing():
        globals()[name] = value = getattr(importlib.import_module(f".{module}", __name__), name)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
