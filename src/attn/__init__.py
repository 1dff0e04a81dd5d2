"""attn: backend registries as Enums, extended by pip-installed plugins (names load on use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _fork  # now: the fork hook exists before any thread first uses attn

if TYPE_CHECKING:
    from .backends import (
        AttentionBackend,
        AttentionBackendEnum,
        MLAPrefillBackend,
        MLAPrefillBackendEnum,
        register_backend,
        register_mla_prefill_backend,
    )
    from .registry import (
        AttnError,
        AttnWarning,
        BackendLoadError,
        ConflictWarning,
        PluginBackend,
        RejectedPluginWarning,
        Selection,
        SelectionError,
        StateMismatchError,
        UnknownBackendError,
        WorkerState,
        apply_state,
        capture_state,
        ray_setup_hook,
    )

__all__ = [  # the names of the contract (DESIGN.md), and the few docs/api.md justifies one by one
    "AttentionBackend",
    "AttentionBackendEnum",
    "AttnError",
    "AttnWarning",
    "BackendLoadError",
    "ConflictWarning",
    "MLAPrefillBackend",
    "MLAPrefillBackendEnum",
    "PluginBackend",
    "RejectedPluginWarning",
    "Selection",
    "SelectionError",
    "StateMismatchError",
    "UnknownBackendError",
    "WorkerState",
    "__version__",
    "apply_state",
    "capture_state",
    "ray_setup_hook",
    "register_backend",
    "register_mla_prefill_backend",
]


def _version() -> str:
    # The metadata installed with this code, else the first copy on sys.path with a version.
    from .registry._metadata import installed_version  # noqa: PLC0415
    from .registry.loading import code_root  # noqa: PLC0415

    return installed_version("attn", code_root(__name__)) or "0.0.0+unknown"


def __getattr__(name: str) -> object:
    if name not in {*__all__, "_Backend"}:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _fork.importing():  # a fork meanwhile waits for these imports
        if name == "__version__":
            value: object = _version()
        else:
            # attn.backends imports attn.registry: one import serves every public name.
            from . import backends, registry  # noqa: PLC0415 - lazily: import attn imports neither

            if name == "_Backend":
                return backends._deprecated_alias(__name__)  # noqa: SLF001 - the package's own
            value = getattr(backends if name in backends.__all__ else registry, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
