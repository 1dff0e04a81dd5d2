"""The host-agnostic core of attn: declare a registry, get plugins for free.

A host declares one Enum per kind of backend:

```python
from attn.registry import Backend, BackendEnum

class ToyBackend(Backend):
    '''What every toy backend provides.'''

class ToyBackendEnum(BackendEnum, group="toy.backends", host="toy",
                     interface=ToyBackend, noun="toy backend"):
    FAST = "toy.fast:FastBackend"
    CUSTOM = None
```

and gets lazy lookups with helpful errors, runtime registration, entry-point
plugins (``[project.entry-points."toy.backends"]``) with version checks,
conflict resolution and the ``TOY_*`` controls, listing records (`build_report`)
and doctor's findings (`diagnose`), and the ``attn`` commands (`attn.cli.main`).
Nothing here imports the attention modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn import _fork

from .backend import Backend
from .enum import BackendEnum, PluginBackend, register
from .errors import (
    AttnConfigError,
    AttnError,
    AttnWarning,
    BackendInterfaceError,
    BackendLoadError,
    BackendNotRegisteredError,
    Code,
    ConflictWarning,
    InvalidPathError,
    PluginProblemError,
    PluginWarning,
    RejectedPluginWarning,
    SelectionError,
    StateMismatchError,
    UnknownBackendError,
)

# Listing, selection and workers load on first use: a lookup needs none of them.
if TYPE_CHECKING:
    from .listing import build_report, diagnose
    from .selection import Candidate, Reason, Selection
    from .workers import WorkerState, apply_state, capture_state, ray_setup_hook

_LAZY = {
    "Candidate": "selection",
    "Reason": "selection",
    "Selection": "selection",
    "build_report": "listing",
    "diagnose": "listing",
    "WorkerState": "workers",
    "apply_state": "workers",
    "capture_state": "workers",
    "ray_setup_hook": "workers",
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
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib  # noqa: PLC0415

    with _fork.importing():
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
