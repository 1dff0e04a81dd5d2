"""The example plugins from plugins_example/, installed with pip into a real venv."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from venvtools import BUILTIN_NAMES, by_name, registry

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Example:
    """One example plugin: which registry it extends, what it overrides and adds."""

    distribution: str
    registry: str
    other_registry: str
    module: str
    override: str
    override_class: str
    added: str
    added_class: str
    kind: str

    def value(self, cls: str) -> str:
        return f"{self.module}:{cls}"

    def path(self, cls: str) -> str:
        return f"{self.module}.{cls}"


EXAMPLES = [
    Example(
        distribution="attn-example-plugin",
        registry="AttentionBackendEnum",
        other_registry="MLAPrefillBackendEnum",
        module="attn_example_plugin.backends",
        override="FLASH_ATTN",
        override_class="ExampleFlashAttentionBackend",
        added="EXAMPLE_ATTN",
        added_class="ExampleAttentionBackend",
        kind="attention",
    ),
    Example(
        distribution="attn-example-mla",
        registry="MLAPrefillBackendEnum",
        other_registry="AttentionBackendEnum",
        module="attn_example_mla.backends",
        override="TRITON_RAGGED",
        override_class="ExampleTritonRaggedPrefillBackend",
        added="EXAMPLE_MLA_PREFILL",
        added_class="ExampleMLAPrefillBackend",
        kind="MLA prefill",
    ),
]

# Prints what Python sees of the example's two backends; argv: registry, override, added.
PYTHON_VIEW = """
import json
import sys

import attn

enum = getattr(attn, sys.argv[1])
base = attn.AttentionBackend if enum is attn.AttentionBackendEnum else attn.MLAPrefillBackend
override, added = sys.argv[2], sys.argv[3]
out = {"override_module": enum[override].get_class().__module__}
out["override_overridden"] = enum[override].is_overridden()
try:
    backend = enum[added]
except ValueError as exc:
    out["added_error"] = str(exc)
else:
    cls = backend.get_class()
    out["added_name"] = backend.name
    out["added_same_object"] = backend is enum[added]
    out["added_path"] = backend.get_path()
    out["added_module_path"] = backend.get_path(include_classname=False)
    out["added_class"] = f"{cls.__module__}.{cls.__qualname__}"
    out["added_is_backend"] = isinstance(cls, type) and issubclass(cls, base)
print(json.dumps(out))
"""


def pick(row, *keys):
    """The ``keys`` of ``row``: consumers ignore fields they do not know, so tests do too."""
    return {key: row[key] for key in keys}


ROW_KEYS = ("origin", "overridden", "distribution", "distribution_version", "path", "default_path")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.distribution)
def test_example_plugin_overrides_and_adds_backends(venv, example):
    """An installed example plugin overrides one built-in and adds one backend."""
    builtin_rows = by_name(registry(venv.list_json(), example.registry)["backends"])
    builtin_default = builtin_rows[example.override]["default_path"]

    venv.install(example.distribution)
    data = venv.list_json()
    entry = registry(data, example.registry)
    names = [row["name"] for row in entry["backends"]]
    assert names == [*BUILTIN_NAMES[example.registry], example.added]
    rows = by_name(entry["backends"])
    dist = {"distribution": example.distribution, "distribution_version": "0.1.0"}
    assert pick(rows[example.override], *ROW_KEYS, "status", "reason") == {
        "origin": "plugin",
        "overridden": True,
        **dist,
        "path": example.path(example.override_class),
        "default_path": builtin_default,
        "status": "ok",
        "reason": None,
    }
    # Knowing a plugin backend's availability would mean importing its module.
    assert pick(rows[example.added], *ROW_KEYS, "status", "available") == {
        "origin": "plugin",
        "overridden": False,
        **dist,
        "path": example.path(example.added_class),
        "default_path": None,
        "status": "ok",
        "available": None,
    }
    plugins = {row["name"]: pick(row, *row) for row in entry["plugins"]}
    assert len(plugins) == len(entry["plugins"])
    expected = {}
    for name, cls in (
        (example.override, example.override_class),
        (example.added, example.added_class),
    ):
        expected[name] = {
            "name": name,
            "value": example.value(cls),
            **dist,
            "status": "used",
            "reason": None,
        }
    assert {name: pick(row, *expected.get(name, row)) for name, row in plugins.items()} == expected

    other = registry(data, example.other_registry)
    assert other["plugins"] == []
    assert {row["origin"] for row in other["backends"]} == {"builtin"}

    loaded = by_name(registry(venv.list_json("--load"), example.registry)["backends"])
    assert loaded[example.override]["status"] == loaded[example.added]["status"] == "ok"

    view = venv.python_json(PYTHON_VIEW, example.registry, example.override, example.added)
    assert view == {
        "override_module": example.module,
        "override_overridden": True,
        "added_name": example.added,
        "added_same_object": True,
        "added_path": example.path(example.added_class),
        "added_module_path": example.module,
        "added_class": example.path(example.added_class),
        "added_is_backend": True,
    }


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.distribution)
def test_uninstalled_example_plugin_leaves_builtins(venv, example):
    """After `pip uninstall` of an example plugin, its backends are gone and built-ins are back."""
    builtin_rows = by_name(registry(venv.list_json(), example.registry)["backends"])
    venv.install(example.distribution)
    rows = by_name(registry(venv.list_json(), example.registry)["backends"])
    assert rows[example.override]["origin"] == "plugin"

    venv.uninstall(example.distribution)
    entry = registry(venv.list_json(), example.registry)
    assert entry["plugins"] == []
    assert by_name(entry["backends"]) == builtin_rows
    view = venv.python_json(PYTHON_VIEW, example.registry, example.override, example.added)
    assert view["override_module"].startswith("attn.")
    assert view["override_overridden"] is False
    unknown = f"Unknown {example.kind} backend: {example.added!r}. Valid options are: "
    assert view["added_error"].startswith(unknown)


def test_refresh_sees_plugin_installed_while_running(venv):
    """`refresh()` in a running process merges a plugin pip-installed after the first lookup."""
    wheel = venv.wheels["attn-example-plugin"]
    result = venv.python_json(
        """
        import json
        import subprocess
        import sys

        import attn

        enum = attn.AttentionBackendEnum
        out = {"flash_before": enum.FLASH_ATTN.get_path()}
        attn.register_backend(enum.CUSTOM, "x.y:Z")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "--no-deps", "--no-index", "--no-compile", sys.argv[1]],
            check=True,
            timeout=300,
        )
        try:
            enum["EXAMPLE_ATTN"]
        except ValueError:
            out["known_before_refresh"] = False
        else:
            out["known_before_refresh"] = True
        enum.refresh()
        out["added_class"] = enum["EXAMPLE_ATTN"].get_class().__qualname__
        out["flash_after"] = enum.FLASH_ATTN.get_path()
        out["flash_module"] = enum.FLASH_ATTN.get_class().__module__
        out["custom_path"] = enum.CUSTOM.get_path()
        out["custom_overridden"] = enum.CUSTOM.is_overridden()
        print(json.dumps(out))
        """,
        str(wheel),
    )
    assert result["flash_before"].startswith("attn.")
    # Discovery runs once per registry until refresh() is called.
    assert result["known_before_refresh"] is False
    assert result["added_class"] == "ExampleAttentionBackend"
    assert result["flash_after"] == "attn_example_plugin.backends.ExampleFlashAttentionBackend"
    assert result["flash_module"] == "attn_example_plugin.backends"
    # Runtime registrations survive a refresh.
    assert result["custom_path"] == "x.y.Z"
    assert result["custom_overridden"] is True


def test_disable_plugins_ignores_installed_plugins(venv):
    """`ATTN_DISABLE_PLUGINS=1` lists no plugins, keeps FLASH_ATTN built-in, beats ATTN_PLUGINS."""
    venv.install("attn-example-plugin")
    for env in (
        {"ATTN_DISABLE_PLUGINS": "1"},
        {"ATTN_DISABLE_PLUGINS": "Yes", "ATTN_PLUGINS": "attn-example-plugin"},
    ):
        data = venv.list_json(env=env)
        for name in BUILTIN_NAMES:
            entry = registry(data, name)
            assert entry["plugins"] == []
            assert [row["name"] for row in entry["backends"]] == BUILTIN_NAMES[name]
            assert {row["origin"] for row in entry["backends"]} == {"builtin"}
    table = venv.attn("list", env={"ATTN_DISABLE_PLUGINS": "1"})
    assert table.returncode == 0, table.stderr
    assert "disabled" in table.stdout.lower()

    result = venv.python_json(
        """
        import json
        import attn

        enum = attn.AttentionBackendEnum
        out = {"flash_module": enum.FLASH_ATTN.get_class().__module__}
        try:
            enum["EXAMPLE_ATTN"]
        except ValueError:
            out["example_known"] = False
        else:
            out["example_known"] = True
        attn.register_backend(enum.CUSTOM, "x.y:Z")
        out["custom_path"] = enum.CUSTOM.get_path()
        print(json.dumps(out))
        """,
        env={"ATTN_DISABLE_PLUGINS": "1"},
    )
    assert result["flash_module"].startswith("attn.")
    assert result["example_known"] is False
    # Runtime registrations still work with plugins disabled.
    assert result["custom_path"] == "x.y.Z"

    # Without the variable the same venv uses the plugin.
    rows = by_name(registry(venv.list_json(), "AttentionBackendEnum")["backends"])
    assert rows["FLASH_ATTN"]["origin"] == "plugin"


def test_bad_boolean_control_is_an_error(venv):
    """An ATTN_DISABLE_PLUGINS value that is not a boolean is a usage error naming it: exit 2."""
    result = venv.attn("list", env={"ATTN_DISABLE_PLUGINS": "maybe"})
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        (
            "Error: Invalid value for ATTN_DISABLE_PLUGINS: 'maybe'; "
            "expected one of 1, true, yes, on, 0, false, no, off\n"
        ),
    )


def test_runtime_registration_is_listed_as_runtime(venv):
    """A backend registered at runtime is listed with origin `runtime` and no distribution."""
    venv.install("attn-example-plugin")
    result = venv.python_json(
        """
        import io
        import json
        import sys
        from contextlib import redirect_stdout

        import attn
        from attn.cli import main

        attn.register_backend(attn.AttentionBackendEnum.FLASH_ATTN, "x.y:Z")
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            try:
                sys.argv = ["attn", "list", "--json", "AttentionBackendEnum"]
                code = main()
            except SystemExit as exc:
                code = exc.code
        print(json.dumps({"code": code, "data": json.loads(buffer.getvalue())}))
        """
    )
    assert result["code"] in (0, None)
    data = result["data"]
    venv.validate(data)
    row = by_name(registry(data, "AttentionBackendEnum")["backends"])["FLASH_ATTN"]
    assert row["origin"] == "runtime"
    assert row["path"] == "x.y.Z"
    assert row["overridden"] is True
    assert row["distribution"] is None
    assert row["distribution_version"] is None
