"""The public surface of ``import attn``: its names, its version, and its cost."""

from __future__ import annotations

import json
import textwrap
from importlib.metadata import version

import pytest

import attn

EXPECTED = {
    "AttentionBackend",
    "AttentionBackendEnum",
    "AttnConfigError",
    "AttnError",
    "AttnWarning",
    "Backend",
    "BackendEnum",
    "BackendInterfaceError",
    "BackendLoadError",
    "BackendNotRegisteredError",
    "ConflictWarning",
    "InvalidPathError",
    "MLAPrefillBackend",
    "MLAPrefillBackendEnum",
    "PluginBackend",
    "PluginProblemError",
    "PluginWarning",
    "RejectedPluginWarning",
    "StateMismatchError",
    "UnknownBackendError",
    "WorkerState",
    "__version__",
    "apply_state",
    "capture_state",
    "ray_setup_hook",
    "register_backend",
    "register_mla_prefill_backend",
}


def test_all_is_the_contract_and_sorted():
    """__all__ names exactly the public names, sorted."""
    assert set(attn.__all__) == EXPECTED
    assert list(attn.__all__) == sorted(attn.__all__)


#: Where each public name (but __version__) is defined: ``module:qualname``.
DEFINED_IN = {
    "AttentionBackend": "attn.backends._base:AttentionBackend",
    "AttentionBackendEnum": "attn.backends.registry:AttentionBackendEnum",
    "AttnConfigError": "attn:AttnConfigError",
    "AttnError": "attn:AttnError",
    "AttnWarning": "attn:AttnWarning",
    "Backend": "attn.registry.backend:Backend",
    "BackendEnum": "attn.registry.enum:BackendEnum",
    "BackendInterfaceError": "attn:BackendInterfaceError",
    "BackendLoadError": "attn:BackendLoadError",
    "BackendNotRegisteredError": "attn:BackendNotRegisteredError",
    "ConflictWarning": "attn:ConflictWarning",
    "InvalidPathError": "attn:InvalidPathError",
    "MLAPrefillBackend": "attn.backends._base:MLAPrefillBackend",
    "MLAPrefillBackendEnum": "attn.backends.registry:MLAPrefillBackendEnum",
    "PluginBackend": "attn.registry.enum:PluginBackend",
    "PluginProblemError": "attn:PluginProblemError",
    "PluginWarning": "attn:PluginWarning",
    "RejectedPluginWarning": "attn:RejectedPluginWarning",
    "StateMismatchError": "attn:StateMismatchError",
    "UnknownBackendError": "attn:UnknownBackendError",
    "WorkerState": "attn.registry.workers:WorkerState",
    "apply_state": "attn.registry.workers:apply_state",
    "capture_state": "attn.registry.workers:capture_state",
    "ray_setup_hook": "attn.registry.workers:ray_setup_hook",
    "register_backend": "attn.backends.registry:register_backend",
    "register_mla_prefill_backend": "attn.backends.registry:register_mla_prefill_backend",
}


def test_every_public_name_but_the_version_has_a_home():
    """DEFINED_IN covers every public name but __version__."""
    assert set(DEFINED_IN) == EXPECTED - {"__version__"}


@pytest.mark.parametrize("name", sorted(DEFINED_IN))
def test_every_public_name_resolves(name):
    """Each exported name is the object defined where it lives, and listed by dir()."""
    obj = getattr(attn, name)
    assert f"{obj.__module__}:{obj.__qualname__}" == DEFINED_IN[name]
    assert name in dir(attn)


def test_unknown_attribute_raises_attribute_error():
    """A missing attribute is an AttributeError naming it."""
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = attn.nope


def test_version_is_the_installed_distribution():
    """attn.__version__ is the installed distribution's version."""
    assert attn.__version__ == version("attn")


def test_error_and_warning_hierarchy():
    """Errors derive from AttnError and the builtin callers catch; warnings from UserWarning."""
    assert issubclass(attn.UnknownBackendError, attn.AttnError)
    assert issubclass(attn.UnknownBackendError, ValueError)
    assert issubclass(attn.BackendLoadError, attn.AttnError)
    assert issubclass(attn.BackendLoadError, ImportError)
    assert issubclass(attn.BackendInterfaceError, attn.BackendLoadError)
    assert issubclass(attn.BackendNotRegisteredError, ValueError)
    assert issubclass(attn.InvalidPathError, ValueError)
    assert issubclass(attn.AttnConfigError, ValueError)
    assert issubclass(attn.AttnWarning, UserWarning)
    assert issubclass(attn.ConflictWarning, attn.AttnWarning)
    assert issubclass(attn.PluginWarning, attn.AttnWarning)
    assert attn.AttnError.__module__ == "attn"


def _imported_after(python, code: str) -> dict[str, bool]:
    script = textwrap.dedent(
        f"""
        import json, sys
        {code}
        heavy = ("importlib.metadata", "importlib_metadata", "packaging", "email")
        print(json.dumps({{name: name in sys.modules for name in heavy}}))
        """
    )
    done = python.run("-c", script)
    return json.loads(done.stdout)


def test_import_attn_imports_no_metadata_machinery(python):
    """import attn imports neither importlib.metadata, its backport, nor packaging."""
    assert _imported_after(python, "import attn") == {
        "importlib.metadata": False,
        "importlib_metadata": False,
        "packaging": False,
        "email": False,
    }


def test_member_access_scans_nothing(python):
    """Touching members and the registry classes still scans nothing."""
    imported = _imported_after(
        python,
        "import attn; attn.AttentionBackendEnum.FLASH_ATTN; list(attn.MLAPrefillBackendEnum)",
    )
    assert imported["importlib.metadata"] is False
    assert imported["packaging"] is False


def test_lookup_reads_metadata_without_importlib_metadata(python):
    """A name lookup scans with the fast reader: no importlib.metadata, no email."""
    imported = _imported_after(
        python,
        "import os; os.environ['ATTN_NO_CACHE'] = '1'; "
        "import attn; attn.AttentionBackendEnum['FLASH_ATTN']",
    )
    assert imported["importlib.metadata"] is False
    assert imported["email"] is False


def test_lookup_with_the_reference_reader_uses_importlib_metadata(python):
    """ATTN_READER=reference makes the same lookup read through importlib.metadata."""
    imported = _imported_after(
        python,
        "import os; os.environ['ATTN_READER'] = 'reference'; os.environ['ATTN_NO_CACHE'] = '1'; "
        "import attn; attn.AttentionBackendEnum['FLASH_ATTN']",
    )
    assert imported["importlib.metadata"] is True


def test_python_dash_m_attn(python):
    """python -m attn is the attn command."""
    done = python.run("-m", "attn", "--version")
    assert done.stdout.startswith(f"attn {version('attn')} ")


def test_py_typed_is_shipped():
    """The package is marked as typed."""
    from importlib.resources import files  # noqa: PLC0415

    assert files("attn").joinpath("py.typed").is_file()
