"""The public surface of ``import attn``: its names, its version, and its cost."""

from __future__ import annotations

import importlib
import json
import textwrap
from importlib.metadata import version

import pytest

import attn
import attn.registry

#: attn's public names (but __version__), each with where it is defined: ``module:qualname``.
DEFINED_IN = {
    "AttentionBackend": "attn.backends:AttentionBackend",
    "AttentionBackendEnum": "attn.backends:AttentionBackendEnum",
    "AttnError": "attn:AttnError",
    "AttnWarning": "attn:AttnWarning",
    "BackendLoadError": "attn:BackendLoadError",
    "ConflictWarning": "attn:ConflictWarning",
    "MLAPrefillBackend": "attn.backends:MLAPrefillBackend",
    "MLAPrefillBackendEnum": "attn.backends:MLAPrefillBackendEnum",
    "PluginBackend": "attn.registry.enum:PluginBackend",
    "RejectedPluginWarning": "attn:RejectedPluginWarning",
    "Selection": "attn.registry.selection:Selection",
    "SelectionError": "attn:SelectionError",
    "StateMismatchError": "attn:StateMismatchError",
    "UnknownBackendError": "attn:UnknownBackendError",
    "WorkerState": "attn.registry.workers:WorkerState",
    "apply_state": "attn.registry.workers:apply_state",
    "capture_state": "attn.registry.workers:capture_state",
    "ray_setup_hook": "attn.registry.workers:ray_setup_hook",
    "register_backend": "attn.backends:register_backend",
    "register_mla_prefill_backend": "attn.backends:register_mla_prefill_backend",
}
EXPECTED = {*DEFINED_IN, "__version__"}

#: What a host author needs: the enum base, the backend base, errors, workers, listing.
EXPECTED_REGISTRY = {
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
}


def test_all_is_the_contract_and_sorted():
    """__all__ names exactly the public names, sorted, at most 22 with room for selection."""
    assert set(attn.__all__) == EXPECTED
    assert list(attn.__all__) == sorted(attn.__all__)
    assert len({*attn.__all__, "Selection", "SelectionError"}) <= 22


def test_the_core_exports_what_a_host_author_needs():
    """attn.registry's __all__ is exactly the host's surface, sorted; the rest is private."""
    assert set(attn.registry.__all__) == EXPECTED_REGISTRY
    assert list(attn.registry.__all__) == sorted(attn.registry.__all__)
    for name in ("RegistryState", "Snapshot", "Entry", "BackendEnumMeta", "state_of"):
        assert not hasattr(attn.registry, name), name
    for name in ("declared_registries", "ClassPath", "parse_path", "BackendRow", "Finding"):
        assert not hasattr(attn.registry, name), name


@pytest.mark.parametrize("name", sorted(EXPECTED_REGISTRY))
def test_every_core_name_resolves(name):
    """Each name of attn.registry resolves, is listed by dir(), and is attn's own where shared."""
    obj = getattr(attn.registry, name)
    assert name in dir(attn.registry)
    if name in EXPECTED:
        assert getattr(attn, name) is obj


def test_dropped_names_are_not_in_attn():
    """Names that only host authors need live in attn.registry, not in attn."""
    for name in ("Backend", "BackendEnum", "PluginProblemError", "InvalidPathError"):
        with pytest.raises(AttributeError):
            getattr(attn, name)


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


def test_version_is_the_copy_beside_the_imported_code(python, site):
    """A stale attn metadata folder earlier on sys.path is not the version of the code imported."""
    installed = version("attn")
    site.dist("attn", "9.9", requires=())
    done = python.run("-c", "import attn; print(attn.__version__)")
    assert done.stdout.strip() == installed != "9.9"


@pytest.mark.parametrize("reader", ["reference", "bogus"])
def test_version_does_not_depend_on_the_reader_switch(python, monkeypatch, reader):
    """attn.__version__ answers under any ATTN_READER; a bad value is discovery's error."""
    monkeypatch.setenv("ATTN_READER", reader)
    done = python.run("-c", "import attn; print(attn.__version__)")
    assert done.stdout.strip() == version("attn")


def test_error_and_warning_hierarchy():
    """Errors derive from AttnError and the builtin callers catch; warnings from UserWarning."""
    core = attn.registry
    assert issubclass(attn.UnknownBackendError, attn.AttnError)
    assert issubclass(attn.UnknownBackendError, ValueError)
    assert issubclass(attn.BackendLoadError, attn.AttnError)
    assert issubclass(attn.BackendLoadError, ImportError)
    assert issubclass(core.BackendInterfaceError, attn.BackendLoadError)
    assert issubclass(core.BackendNotRegisteredError, ValueError)
    assert issubclass(core.InvalidPathError, ValueError)
    assert issubclass(core.AttnConfigError, ValueError)
    assert issubclass(attn.AttnWarning, UserWarning)
    assert issubclass(attn.ConflictWarning, attn.AttnWarning)
    assert issubclass(core.PluginWarning, attn.AttnWarning)
    assert attn.AttnError.__module__ == "attn"


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED_REGISTRY if n[0].isupper()))
def test_every_class_is_where_its_module_says(name):
    """A class's __module__ is a namespace that has it, so pickle and tracebacks find it."""
    cls = getattr(attn.registry, name)
    assert getattr(importlib.import_module(cls.__module__), cls.__qualname__) is cls


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
