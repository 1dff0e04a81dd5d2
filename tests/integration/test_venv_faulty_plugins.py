"""Faulty plugins from tests/integration/plugins/, installed with pip into a real venv."""

from __future__ import annotations

import pytest
from venvtools import ATTN_VERSION, BUILTIN_NAMES, by_name, registry

pytestmark = pytest.mark.integration

# Looks NAME up in AttentionBackendEnum and calls METHOD on it; prints what happened.
LOOKUP = """
import json
import sys
import warnings

import attn

name, method = sys.argv[1], sys.argv[2]
out = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        out["result"] = str(getattr(attn.AttentionBackendEnum[name], method)())
    except Exception as exc:
        cause = exc.__cause__
        out["error"] = {
            "type": type(exc).__name__,
            "message": str(exc),
            "is_attn_error": isinstance(exc, attn.AttnError),
            "is_value_error": isinstance(exc, ValueError),
            "is_import_error": isinstance(exc, ImportError),
            "cause": None if cause is None else type(cause).__name__,
            "cause_message": None if cause is None else str(cause),
        }
out["warnings"] = [
    {
        "category": w.category.__name__,
        "is_attn_warning": issubclass(w.category, attn.AttnWarning),
        "is_user_warning": issubclass(w.category, UserWarning),
        "message": str(w.message),
    }
    for w in caught
]
print(json.dumps(out))
"""


def attention_plugins(venv, *args, env=None):
    """The AttentionBackendEnum plugin rows of `attn list --json`, by distribution and name."""
    entry = registry(venv.list_json(*args, env=env), "AttentionBackendEnum")
    return {(row["distribution"], row["name"]): row for row in entry["plugins"]}, by_name(
        entry["backends"]
    )


def test_incompatible_plugin_is_not_merged(venv):
    """A plugin requiring attn>=99 is incompatible: listed, not merged, and fatal in strict mode."""
    venv.install("attn-incompatible-plugin")
    plugins, backends = attention_plugins(venv)
    row = plugins["attn-incompatible-plugin", "INCOMPATIBLE_ATTN"]
    assert row["status"] == "incompatible"
    assert "requires attn>=99" in row["reason"]
    assert f"installed {ATTN_VERSION}" in row["reason"]
    assert row["distribution_version"] == "0.1.0"
    assert "INCOMPATIBLE_ATTN" not in backends
    assert list(backends) == BUILTIN_NAMES["AttentionBackendEnum"]

    table = venv.attn("list")
    assert table.returncode == 0, table.stderr
    assert "INCOMPATIBLE_ATTN" in table.stdout

    lookup = venv.python_json(LOOKUP, "INCOMPATIBLE_ATTN", "get_path")
    error = lookup["error"]
    assert error["is_value_error"], error
    assert "incompatible" in error["message"].lower()

    strict = venv.attn("list", env={"ATTN_STRICT": "1"})
    assert strict.returncode == 1
    strict = venv.attn("list", "--json", env={"ATTN_STRICT": "1"})
    assert strict.returncode == 1
    # Strict mode fails the first access of the registry from Python too.
    lookup = venv.python_json(LOOKUP, "FLASH_ATTN", "get_path", env={"ATTN_STRICT": "1"})
    assert lookup["error"]["is_attn_error"], lookup


def test_conflicting_plugins_resolve_deterministically(venv):
    """Of two plugins claiming SHARED_ATTN, a wins, warning; ATTN_PLUGINS or ATTN_PREFER pick b."""
    venv.install("attn-conflict-a", "attn-conflict-b")
    plugins, backends = attention_plugins(venv)
    # Same sys.path entry, so the smaller normalized distribution name wins.
    assert plugins["attn-conflict-a", "SHARED_ATTN"]["status"] == "used"
    shadowed = plugins["attn-conflict-b", "SHARED_ATTN"]
    assert shadowed["status"] == "shadowed"
    assert shadowed["reason"]
    shared = backends["SHARED_ATTN"]
    assert shared["origin"] == "plugin"
    assert shared["distribution"] == "attn-conflict-a"
    assert shared["path"] == "attn_conflict_a.SharedAttentionBackend"

    lookup = venv.python_json(LOOKUP, "SHARED_ATTN", "get_path")
    assert lookup["result"] == "attn_conflict_a.SharedAttentionBackend"
    attn_warnings = [w for w in lookup["warnings"] if w["is_attn_warning"]]
    assert len(attn_warnings) == 1, lookup["warnings"]
    warning = attn_warnings[0]
    assert warning["is_user_warning"]
    for text in ("attn-conflict-a", "attn-conflict-b", "ATTN_PREFER=attn-conflict-b"):
        assert text in warning["message"]

    # An empty ATTN_PLUGINS is the same as unset.
    plugins, _ = attention_plugins(venv, env={"ATTN_PLUGINS": ""})
    assert plugins["attn-conflict-a", "SHARED_ATTN"]["status"] == "used"
    assert plugins["attn-conflict-b", "SHARED_ATTN"]["status"] == "shadowed"

    # Names in ATTN_PLUGINS are normalized as pip does.
    for selection in ("attn-conflict-b", "ATTN_Conflict.B"):
        env = {"ATTN_PLUGINS": selection}
        plugins, backends = attention_plugins(venv, env=env)
        assert plugins["attn-conflict-b", "SHARED_ATTN"]["status"] == "used"
        disabled = plugins["attn-conflict-a", "SHARED_ATTN"]
        assert disabled["status"] == "disabled"
        assert disabled["reason"]
        assert backends["SHARED_ATTN"]["distribution"] == "attn-conflict-b"
    lookup = venv.python_json(LOOKUP, "SHARED_ATTN", "get_path", env=env)
    assert lookup["result"] == "attn_conflict_b.SharedAttentionBackend"
    assert not [w for w in lookup["warnings"] if w["is_attn_warning"]]

    # ATTN_PREFER picks b and changes nothing else: a stays in effect, shadowed
    # for this name only; the user chose, so the merge does not warn.
    env = {"ATTN_PREFER": "ATTN_Conflict.B"}
    plugins, backends = attention_plugins(venv, env=env)
    assert plugins["attn-conflict-b", "SHARED_ATTN"]["status"] == "used"
    assert plugins["attn-conflict-a", "SHARED_ATTN"]["status"] == "shadowed"
    assert "listed first in ATTN_PREFER" in plugins["attn-conflict-a", "SHARED_ATTN"]["reason"]
    assert backends["SHARED_ATTN"]["distribution"] == "attn-conflict-b"
    lookup = venv.python_json(LOOKUP, "SHARED_ATTN", "get_path", env=env)
    assert lookup["result"] == "attn_conflict_b.SharedAttentionBackend"
    assert not [w for w in lookup["warnings"] if w["is_attn_warning"]]

    strict = venv.attn("list", env={"ATTN_STRICT": "1"})
    assert strict.returncode == 1


def test_broken_plugin_fails_only_when_loaded(venv):
    """A plugin failing at import is listed, broken under --load, and its get_class() raises."""
    venv.install("attn-broken-plugin")
    table = venv.attn("list")
    assert table.returncode == 0, table.stderr
    assert "BROKEN_ATTN" in table.stdout

    plugins, backends = attention_plugins(venv)
    assert backends["BROKEN_ATTN"]["status"] == "ok"
    assert backends["BROKEN_ATTN"]["origin"] == "plugin"

    loaded_plugins, loaded = attention_plugins(venv, "--load")
    # --load changes only the status and reason of backends rows.
    assert loaded_plugins == plugins
    assert list(loaded) == list(backends)
    for name, row in loaded.items():
        unchanged = {key: value for key, value in row.items() if key not in {"status", "reason"}}
        assert unchanged == {key: backends[name][key] for key in unchanged}, name
    broken = loaded["BROKEN_ATTN"]
    assert broken["status"] == "broken"
    assert "RuntimeError" in broken["reason"]
    assert broken["distribution"] == "attn-broken-plugin"
    assert loaded["FLASH_ATTN"]["status"] == "ok"

    lookup = venv.python_json(LOOKUP, "BROKEN_ATTN", "get_class")
    error = lookup["error"]
    assert error["is_attn_error"], error
    assert error["is_import_error"], error
    for text in ("BROKEN_ATTN", "attn-broken-plugin", "0.1.0"):
        assert text in error["message"]
    assert error["cause"] == "RuntimeError"
    assert "always fails at import" in error["cause_message"]


def test_listing_never_imports_plugin_modules(venv, tmp_path):
    """`attn list`, `attn list --json` and `attn doctor` import no plugin module; --load does."""
    venv.install("attn-sentinel-plugin")
    sentinel = tmp_path / "imported"
    env = {"ATTN_SENTINEL_FILE": str(sentinel)}

    table = venv.attn("list", env=env)
    assert table.returncode == 0, table.stderr
    assert "SENTINEL_ATTN" in table.stdout
    plugins, backends = attention_plugins(venv, env=env)
    assert plugins["attn-sentinel-plugin", "SENTINEL_ATTN"]["status"] == "used"
    assert backends["SENTINEL_ATTN"]["origin"] == "plugin"
    # Lookups that need only the path import nothing either.
    lookup = venv.python_json(LOOKUP, "SENTINEL_ATTN", "get_path", env=env)
    assert lookup["result"] == "attn_sentinel_plugin.SentinelAttentionBackend"
    assert not sentinel.exists()

    doctor = venv.attn("doctor", env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert not sentinel.exists()

    loaded = venv.attn("list", "--load", env=env)
    assert loaded.returncode == 0, loaded.stderr
    assert sentinel.exists()


def test_invalid_entry_points_do_not_spoil_valid_ones(venv):
    """Entry points with a bad name or no attribute part are invalid; GOOD_ATTN still works."""
    venv.install("attn-invalid-plugin")
    plugins, backends = attention_plugins(venv)
    assert plugins["attn-invalid-plugin", "GOOD_ATTN"]["status"] == "used"
    assert plugins["attn-invalid-plugin", "GOOD_ATTN"]["reason"] is None
    for name, value in (
        ("bad-name", "attn_invalid_plugin:Good"),
        ("NO_ATTR", "attn_invalid_plugin"),
    ):
        row = plugins["attn-invalid-plugin", name]
        assert row["status"] == "invalid"
        assert row["reason"]
        assert row["value"] == value
    assert backends["GOOD_ATTN"]["path"] == "attn_invalid_plugin.Good"
    assert "bad-name" not in backends
    assert "NO_ATTR" not in backends

    lookup = venv.python_json(LOOKUP, "GOOD_ATTN", "get_class")
    assert lookup["result"] == "<class 'attn_invalid_plugin.Good'>"
    lookup = venv.python_json(LOOKUP, "NO_ATTR", "get_path")
    assert lookup["error"]["is_value_error"], lookup
