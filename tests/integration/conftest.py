"""A throwaway virtualenv with attn installed from a real wheel.

The session builds one wheel of attn (from this checkout), one of its
requirement ``packaging`` (from the installed files) and one of every plugin
project in ``plugins_example/`` and ``tests/integration/plugins/``, then
creates a virtualenv and installs the attn wheel into it, not editable. Every
pip command runs offline: no configuration, no index, only the wheelhouse.
Each test installs the plugin wheels it needs through the ``venv`` fixture,
which uninstalls everything the test added when it ends, so tests stay
independent while sharing one virtualenv.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import pytest
from venvtools import (
    PIP_TIMEOUT,
    PLUGIN_PARENTS,
    REPO_ROOT,
    SCHEMA_PATH,
    Venv,
    build_wheels,
    check,
    project_of_installed,
    run,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def _plugin_projects() -> list[Path]:
    return sorted(
        project
        for parent in PLUGIN_PARENTS
        for project in parent.iterdir()
        if (project / "pyproject.toml").is_file()
    )


def _schema_validator() -> Any:
    if not SCHEMA_PATH.is_file():
        return None
    import jsonschema  # noqa: PLC0415 - only needed when the schema is there

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Wheels of attn and of every plugin project, by normalized distribution name."""
    wheelhouse = tmp_path_factory.mktemp("wheelhouse")
    # attn's one requirement, built from its installed files: no index is needed.
    packaging = project_of_installed("packaging", tmp_path_factory.mktemp("installed"))
    return build_wheels([REPO_ROOT, packaging, *_plugin_projects()], wheelhouse)


@pytest.fixture(scope="session")
def session_venv(tmp_path_factory: pytest.TempPathFactory, wheelhouse: dict[str, Path]) -> Venv:
    """A virtualenv with attn installed from its wheel."""
    root = tmp_path_factory.mktemp("venv")
    check(run([sys.executable, "-m", "venv", root], timeout=PIP_TIMEOUT))
    venv = Venv(root=root, wheels=wheelhouse, validator=_schema_validator())
    # Offline: attn's requirements come from the wheelhouse, never from an index.
    venv.pip(
        "install", "-q", "--no-index", "--find-links", wheelhouse["attn"].parent, wheelhouse["attn"]
    )
    venv.baseline = venv.distributions()
    return venv


@pytest.fixture
def venv(session_venv: Venv) -> Iterator[Venv]:
    """The session's virtualenv; whatever a test installs into it is uninstalled afterwards."""
    session_venv.restore()
    yield session_venv
    session_venv.restore()
