"""attn installed from its wheel, with no plugin: listing, ``python -m attn``, lookups."""

from __future__ import annotations

import json

import pytest
from venvtools import ATTN_VERSION, BUILTIN_NAMES, GROUPS, SCHEMA_PATH, by_name, registry

pytestmark = pytest.mark.integration


def test_list_json_matches_schema(venv):
    """`attn list --json` output validates against docs/attn-list.schema.json."""
    if not SCHEMA_PATH.is_file():
        pytest.skip(f"schema validation skipped: {SCHEMA_PATH} is missing")
    assert venv.validator is not None
    # list_json validates; check the validator rejects a document missing a field too.
    data = venv.list_json()
    broken = json.loads(json.dumps(data))
    del broken["registries"][0]["backends"][0]["requires"]
    assert not venv.validator.is_valid(broken)


def test_list_shows_both_registries(venv):
    """`attn list` in a fresh venv exits 0 and prints both registries with their built-ins."""
    result = venv.attn("list")
    assert result.returncode == 0, result.stderr
    for name, builtins in BUILTIN_NAMES.items():
        assert name in result.stdout or GROUPS[name] in result.stdout
        for backend in builtins:
            assert backend in result.stdout


def test_list_json_fresh_venv(venv):
    """`attn list --json` has both registries, built-ins in enum order, and no plugins."""
    data = venv.list_json()
    assert data["attn_version"] == ATTN_VERSION
    assert sorted(entry["registry"] for entry in data["registries"]) == sorted(BUILTIN_NAMES)
    for name, builtins in BUILTIN_NAMES.items():
        entry = registry(data, name)
        assert entry["group"] == GROUPS[name]
        assert entry["plugins"] == []
        assert [row["name"] for row in entry["backends"]] == builtins
        for row in entry["backends"]:
            assert row["origin"] == "builtin"
            assert row["overridden"] is False
            assert row["distribution"] is None
            assert row["distribution_version"] is None
            if row["name"] == "CUSTOM":
                assert row["path"] is None
                assert row["default_path"] is None
                assert row["status"] == "unregistered"
                assert row["reason"]
            else:
                assert row["status"] == "ok"
                assert row["reason"] is None
                assert row["path"] == row["default_path"]
                assert row["path"].startswith("attn.")


def test_list_json_matches_python_view(venv):
    """The JSON version and enum order agree with `attn.__version__` and iterating the enums."""
    data = venv.list_json()
    python = venv.python_json(
        """
        import json
        import attn

        print(json.dumps({
            "version": attn.__version__,
            "AttentionBackendEnum": [m.name for m in attn.AttentionBackendEnum],
            "MLAPrefillBackendEnum": [m.name for m in attn.MLAPrefillBackendEnum],
        }))
        """
    )
    assert python["version"] == data["attn_version"] == ATTN_VERSION
    for name, builtins in BUILTIN_NAMES.items():
        assert python[name] == builtins


def test_python_m_attn_list_matches_console_script(venv):
    """`python -m attn list` prints what `attn list` prints, in both formats."""
    for args in (("list",), ("list", "--json")):
        script = venv.attn(*args)
        module = venv.run(venv.python, "-m", "attn", *args)
        assert script.returncode == module.returncode == 0, module.stderr
        assert module.stdout == script.stdout


def test_list_selects_registry_by_class_name_or_group(venv):
    """`attn list REGISTRY` accepts the class name or the group and lists only that registry."""
    for name, group in GROUPS.items():
        for selector in (name, group):
            data = venv.list_json(selector)
            assert [entry["registry"] for entry in data["registries"]] == [name]


def test_list_unknown_registry_is_usage_error(venv):
    """`attn list` with an unknown registry or option exits 2."""
    result = venv.attn("list", "NoSuchBackendEnum")
    assert result.returncode == 2
    result = venv.attn("list", "--no-such-option")
    assert result.returncode == 2


def test_list_load_imports_every_builtin(venv):
    """`attn list --load --json` finds no broken built-in, though their kernels are missing."""
    data = venv.list_json("--load")
    for name in BUILTIN_NAMES:
        for row in registry(data, name)["backends"]:
            expected = "unregistered" if row["name"] == "CUSTOM" else "ok"
            assert row["status"] == expected, row


def test_list_reports_missing_kernel_libraries(venv):
    """Built-ins whose kernel library is not installed are listed unavailable, naming it."""
    rows = by_name(registry(venv.list_json(), "AttentionBackendEnum")["backends"])
    # The venv has neither torch nor flash-attn.
    for name in ("TORCH_SDPA", "FLASH_ATTN"):
        assert rows[name]["available"] is False, rows[name]
        assert rows[name]["requires"], rows[name]
    assert any("torch" in package.lower() for package in rows["TORCH_SDPA"]["requires"])


def test_unknown_backend_name_error(venv):
    """Looking up an unknown name raises an AttnError and ValueError listing the valid options."""
    result = venv.python_json(
        """
        import json
        import attn

        out = {}
        for enum in (attn.AttentionBackendEnum, attn.MLAPrefillBackendEnum):
            try:
                enum["NO_SUCH_BACKEND"]
            except ValueError as exc:
                out[enum.__name__] = [str(exc), isinstance(exc, attn.AttnError)]
        print(json.dumps(out))
        """
    )
    message, is_attn_error = result["AttentionBackendEnum"]
    assert is_attn_error
    assert message.startswith(
        "Unknown attention backend: 'NO_SUCH_BACKEND'. Valid options are: FLASH_ATTN, "
    )
    message, is_attn_error = result["MLAPrefillBackendEnum"]
    assert is_attn_error
    assert message.startswith("Unknown MLA prefill backend: 'NO_SUCH_BACKEND'. Valid options are: ")
    assert "TRITON_RAGGED" in message


def test_import_attn_is_cheap(venv):
    """`import attn` from the installed wheel imports neither importlib.metadata nor packaging."""
    result = venv.python_json(
        """
        import json
        import sys

        heavy = ("importlib.metadata", "importlib_metadata", "packaging")
        before = {name for name in heavy if name in sys.modules}
        import attn
        attn.AttentionBackendEnum.FLASH_ATTN  # plain attribute access scans nothing either
        after = {name for name in heavy if name in sys.modules}
        print(json.dumps(sorted(after - before)))
        """
    )
    assert result == []
