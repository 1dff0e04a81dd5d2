"""The ``attn`` command, run in-process through :func:`attn.cli.main`.

Plugins are real ``*.dist-info`` folders written by the ``site``/``sites``
fixtures. Human output is compared with golden files in ``tests/cli/``
(``UPDATE_GOLDEN=1`` rewrites them); the temporary folder and attn's version
are normalised first. No kernel library is installed unless a test writes it
(the suite is isolated from the machine), so availability is literal. Every
JSON document is validated against its schema in ``docs/``.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

import attn
from attn.cli import main
from attn.registry.codes import Code
from attn.registry.enum import state_of

#: The codes a finding (attn doctor) can have: the first section of Code.
FINDING_CODES = tuple(Code)[: tuple(Code).index(Code.REGISTERED_BY_PLUGIN) + 1]
GOLDEN = Path(__file__).parent / "cli"
# The schema attn ships with its docs: every --json output is validated against it.
_ROOT = Path(__file__).resolve().parents[1]
SCHEMA_PATH = _ROOT / "docs" / "attn-list.schema.json"
VERSION = attn.__version__

ATTENTION = [m.name for m in attn.AttentionBackendEnum]
MLA = [m.name for m in attn.MLAPrefillBackendEnum]
BOOLEAN_VARIABLES = ("ATTN_DISABLE_PLUGINS", "ATTN_STRICT")
HELP_HINT = "Try 'attn --help' for help."
DOCTOR_HINT = "'attn doctor' checks the installed plugins and says how to fix what it finds.\n"


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def run(capsys):
    """Run ``attn ARGS`` in-process; return its exit code, stdout and stderr."""

    def run(*args: str) -> Result:
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def normalise(tmp_path):
    """Make output independent of the run: the temporary folder and attn's version.

    Availability is not normalised: the suite's isolation means a kernel
    library is installed only when a test writes it.
    """

    def normalise(text: str) -> str:
        return text.replace(str(tmp_path), "<tmp>").replace(VERSION, "<version>")

    return normalise


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def schema_validator(path: Path):
    """A validator for the JSON Schema at *path*, itself checked against its meta-schema."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(path.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.fixture(scope="session")
def validator():
    """A validator for `attn list --json`; tests skip schema checks when the file is missing."""
    return schema_validator(SCHEMA_PATH) if SCHEMA_PATH.is_file() else None


@pytest.fixture
def list_json(run, validator):
    """Run ``attn list --json ARGS``; check it exits 0 and matches the schema; return the data."""

    def list_json(*args: str, code: int = 0) -> dict:
        result = run("list", "--json", *args)
        assert result.code == code, result.err
        data = json.loads(result.out)
        if validator is None:
            pytest.skip(f"{SCHEMA_PATH} is missing")
        validator.validate(data)
        return data

    return list_json


def registry(data: dict, name: str) -> dict:
    (entry,) = [r for r in data["registries"] if r["registry"] == name]
    return entry


def rows(entry: dict, key: str = "backends") -> dict:
    return {row["name"]: row for row in entry[key]}


PLUGIN_MODULE = """\
from pathlib import Path

from attn import AttentionBackend, MLAPrefillBackend

Path({sentinel!r}).write_text("imported", encoding="utf-8")


class FlashAttention(AttentionBackend):
    pass


class AcmeAttention(AttentionBackend):
    pass


class AcmePrefill(MLAPrefillBackend):
    pass
"""


@pytest.fixture
def sentinel(tmp_path):
    """The file the acme_attn plugin module writes when it is imported."""
    return tmp_path / "acme_attn-imported"


@pytest.fixture
def plugins(site, sentinel):
    """A plugin environment: one good plugin, one incompatible, one with invalid entry points."""
    site.dist(
        "acme-attn",
        "1.0",
        entry_points={
            "attn.backends": {
                "FLASH_ATTN": "acme_attn:FlashAttention",
                "ACME_ATTN": "acme_attn:AcmeAttention",
            },
            "attn.mla_prefill_backends": {"CUSTOM": "acme_attn:AcmePrefill"},
        },
    )
    site.module("acme_attn", PLUGIN_MODULE.format(sentinel=str(sentinel)))
    site.dist(
        "old-attn",
        "2.0",
        entry_points={"attn.backends": {"OLD_ATTN": "old_attn:Old"}},
        requires=["attn>=99"],
    )
    site.dist(
        "bad-attn",
        "1.5",
        entry_points={"attn.backends": {"bad-name": "bad_attn:Good", "NO_ATTR": "bad_attn"}},
    )
    return site


@pytest.fixture
def broken(site):
    """A compatible plugin whose module fails at import."""
    site.dist("broken-attn", "3.0", entry_points={"attn.backends": {"BROKEN_ATTN": "broken:B"}})
    site.module("broken", "raise RuntimeError('always fails at import')\n")
    return site


@pytest.fixture
def conflict(sites):
    """Two distributions on one sys.path entry claim SHARED_ATTN; share-a wins."""
    site = sites.new()
    for dist in ("share-b", "share-a"):
        module = dist.replace("-", "_")
        site.dist(dist, "1.0", entry_points={"attn.backends": {"SHARED_ATTN": f"{module}:S"}})
    return site


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# -- attn, attn --version, --help ----------------------------------------------------


def test_version(run):
    """`attn --version` prints attn's version and the Python in use."""
    result = run("--version")
    python = sys.version.split()[0]
    assert result == Result(0, f"attn {VERSION} (Python {python}, {sys.executable})\n", "")


def test_main_reads_sys_argv(monkeypatch, capsys):
    """main() without arguments runs the command line in sys.argv."""
    monkeypatch.setattr(sys, "argv", ["attn", "--version"])
    assert main() == 0
    assert capsys.readouterr().out.startswith(f"attn {VERSION} (Python ")


def test_no_command_prints_help_and_exits_2(run):
    """`attn` alone is a usage error: the help goes to stderr, exit 2."""
    result = run()
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith("usage: attn [-h] [--version] COMMAND ...\n")
    for command in ("list", "show", "doctor"):
        assert f"    {command} " in result.err


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["--help"], "usage: attn [-h] [--version] COMMAND ...\n"),
        (
            ["list", "--help"],
            "usage: attn list [-h] [--registry REGISTRY] [--json] [--load] [REGISTRY ...]\n",
        ),
        (["show", "-h"], "usage: attn show [-h] [--registry REGISTRY] [--load] NAME\n"),
        (
            ["doctor", "--help"],
            (
                "usage: attn doctor [-h] [--registry REGISTRY] [--load] [--json]\n"
                "                   [--against FILE]\n"
            ),
        ),
        (["state", "--help"], "usage: attn state [-h] ACTION ...\n"),
        (["state", "save", "--help"], "usage: attn state save [-h] [--registry REGISTRY] FILE\n"),
    ],
)
def test_help_exits_0(run, args, usage):
    """--help prints the command's help on stdout and exits 0."""
    result = run(*args)
    assert result.code == 0
    assert result.out.startswith(usage)
    assert result.err == ""


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["frobnicate"],
            "unknown command 'frobnicate'; the commands are: list, show, doctor, select, state",
            HELP_HINT,
        ),
        (
            ["lsit", "--json"],
            (
                "unknown command 'lsit'; the commands are: list, show, doctor, select, state. "
                "Did you mean 'list'?"
            ),
            HELP_HINT,
        ),
        (
            ["--version", "docter"],
            (
                "unknown command 'docter'; the commands are: list, show, doctor, select, state. "
                "Did you mean 'doctor'?"
            ),
            HELP_HINT,
        ),
        (["--bogus"], "unrecognized arguments: --bogus", HELP_HINT),
        (
            ["list", "--bogus"],
            "unrecognized arguments: --bogus",
            "Try 'attn list --help' for help.",
        ),
        (["--bogus", "list"], "unrecognized arguments: --bogus", HELP_HINT),
        (
            ["show"],
            "the following arguments are required: NAME",
            "Try 'attn show --help' for help.",
        ),
        (["show", "A", "B"], "unrecognized arguments: B", "Try 'attn show --help' for help."),
        (
            ["show", "FLASH_ATTN", "--registry"],
            "argument --registry: expected one argument",
            "Try 'attn show --help' for help.",
        ),
        (
            ["doctor", "extra"],
            "unrecognized arguments: extra",
            "Try 'attn doctor --help' for help.",
        ),
        (
            ["doctor", "doctor"],
            "unrecognized arguments: doctor",
            "Try 'attn doctor --help' for help.",
        ),
        (
            ["state", "save", "x.json", "--bogus"],
            "unrecognized arguments: --bogus",
            "Try 'attn state save --help' for help.",
        ),
    ],
)
def test_usage_errors_exit_2(run, args, message, hint):
    """Bad arguments exit 2 with `Error: ...` and a hint to --help on stderr."""
    result = run(*args)
    assert result == Result(2, "", f"Error: {message}\n{hint}\n")


VALID_REGISTRIES = (
    "valid registries are: AttentionBackendEnum (attn.backends), "
    "MLAPrefillBackendEnum (attn.mla_prefill_backends), or another host's as MODULE:CLASS"
)


@pytest.mark.parametrize(
    ("selector", "suggestion"),
    [
        ("NoSuchBackendEnum", ". Did you mean 'AttentionBackendEnum'?"),
        ("attentionbackendenum", ". Did you mean 'AttentionBackendEnum'?"),
        ("attn.backend", ". Did you mean 'attn.backends'?"),
        ("attn-backends", ". Did you mean 'attn.backends'?"),
        ("backends", ". Did you mean 'attn.backends'?"),
        ("Nope", ""),
        ("", ""),  # attn list "$REG" with REG unset lists nothing silently
    ],
)
@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["show", "FLASH_ATTN"]])
def test_unknown_registry_is_usage_error(run, command, selector, suggestion):
    """REGISTRY must be a class name or group spelled exactly; anything else exits 2."""
    args = [*command, selector] if command[0] == "list" else [*command, "--registry", selector]
    result = run(*args)
    hint = f"Try 'attn {command[0]} --help' for help."
    assert result == Result(
        2,
        "",
        f"Error: unknown registry {selector!r}; {VALID_REGISTRIES}{suggestion}\n{hint}\n",
    )


@pytest.mark.parametrize("variable", BOOLEAN_VARIABLES)
@pytest.mark.parametrize(
    "args", [["list"], ["list", "--json"], ["show", "FLASH_ATTN"], ["doctor"], ["doctor", "--load"]]
)
def test_invalid_boolean_variable_exits_2(run, monkeypatch, variable, args):
    """An ATTN_* boolean with a bad value is an error naming the variable, exit 2."""
    monkeypatch.setenv(variable, "maybe")
    result = run(*args)
    assert result == Result(
        2,
        "",
        f"Error: Invalid value for {variable}: 'maybe'; "
        "expected one of 1, true, yes, on, 0, false, no, off\n",
    )


@pytest.mark.parametrize("variable", ["ATTN_NO_CACHE", "ATTN_READER"])
def test_invalid_switch_exits_2_with_plugins_disabled_too(run, monkeypatch, variable):
    """With ATTN_DISABLE_PLUGINS=1 nothing scans, and a bad value is still a usage error."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    monkeypatch.setenv(variable, "maybe")
    result = run("list")
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith(f"Error: Invalid value for {variable}: 'maybe'; expected ")


# -- attn list ----------------------------------------------------------------------


def test_list_builtins_golden(run, normalise):
    """`attn list` with no plugin: both registries, every built-in, CUSTOM unregistered."""
    result = run("list")
    assert result.code == 0
    assert result.err == ""
    assert_golden("list-builtins", normalise(result.out))


def test_list_plugins_golden(run, plugins, normalise):
    """`attn list` shows plugin backends in the table and rejected plugins below it."""
    result = run("list")
    assert result.code == 0
    assert result.err == ""
    assert_golden("list-plugins", normalise(result.out))


def test_list_fits_100_columns(run, plugins, conflict, broken):
    """Every line of the human listing fits in 100 columns, even with --load."""
    result = run("list", "--load")
    assert result.code == 0
    assert max(len(line) for line in result.out.splitlines()) <= 100


def test_the_lines_below_the_tables_fit_100_columns(run, site, monkeypatch):
    """The ATTN_PLUGINS note, a misspelt group's rows and doctor's --load hint are wrapped too."""
    name = "a-plugin-distribution-whose-name-is-long-enough-to-need-a-second-line"
    site.dist(name, "10.20.30", entry_points={"attn.backend": {"TYPO_ATTN": "t:T"}})
    monkeypatch.setenv("ATTN_PLUGINS", ",".join([name, "another-distribution"] * 2))
    listed = run("list")
    doctor = run("doctor", "--registry", "attn.backends", "--registry", "MLAPrefillBackendEnum")
    for result in (listed, doctor):  # a word longer than a line is not broken
        assert all(len(line) <= 100 or " " not in line.strip() for line in result.out.splitlines())
    assert "Plugins are limited to the distributions in ATTN_PLUGINS=" in " ".join(
        listed.out.split()
    )


def test_list_truncates_a_long_source_to_fit(run, site):
    """A long distribution name is shortened in the FROM column to keep 100 columns."""
    name = "an-attention-plugin-distribution-with-a-very-long-name"
    site.dist(name, "10.20.30", entry_points={"attn.backends": {"LONG_ATTN": "long:L"}})
    result = run("list", "attn.backends")
    line = next(line for line in result.out.splitlines() if line.startswith("LONG_ATTN"))
    assert len(line) <= 100
    assert "an-attention-plugin-distri..." in line
    assert "..." in line
    assert name not in line


def test_list_measures_a_source_as_it_is_printed(run, site):
    """Control characters in a Name are escaped first, then the FROM column is cut to fit."""
    site.dist(
        "evil\x1b[2Jname",
        "1.0\x1b]0;pwned\x07\u202e",
        entry_points={"attn.backends": {"EV": "e:E"}},
    )
    site.dist("évian-attn", "1.0", entry_points={"attn.backends": {"EVIAN": "e:E"}})
    result = run("list", "attn.backends")
    line = next(line for line in result.out.splitlines() if line.startswith("EV "))
    assert len(line) <= 100
    assert "evil\\x1b[2Jname 1.0\\x1b]0;..." in line
    assert "\x1b" not in result.out
    assert "évian-attn 1.0" in result.out  # a printable Name as written, non-ASCII included


@pytest.mark.parametrize(
    ("selectors", "expected"),
    [
        ([], ["AttentionBackendEnum", "MLAPrefillBackendEnum"]),
        (["AttentionBackendEnum"], ["AttentionBackendEnum"]),
        (["attn.backends"], ["AttentionBackendEnum"]),
        (["MLAPrefillBackendEnum"], ["MLAPrefillBackendEnum"]),
        (["attn.mla_prefill_backends"], ["MLAPrefillBackendEnum"]),
        (["attn.backends", "AttentionBackendEnum"], ["AttentionBackendEnum"]),
        (
            ["attn.mla_prefill_backends", "attn.backends"],
            ["MLAPrefillBackendEnum", "AttentionBackendEnum"],
        ),
    ],
)
def test_list_selects_registries(run, list_json, selectors, expected):
    """REGISTRY picks registries by class name or group, in the order given, once each."""
    data = list_json(*selectors)
    assert [r["registry"] for r in data["registries"]] == expected
    table = run("list", *selectors)
    titles = [line.split()[0] for line in table.out.splitlines() if "(entry-point group " in line]
    assert titles == expected


def test_list_json_builtins(list_json):
    """`attn list --json` without plugins: built-ins in enum order, CUSTOM unregistered."""
    data = list_json()
    assert data["attn_version"] == VERSION
    attention = registry(data, "AttentionBackendEnum")
    assert attention["group"] == "attn.backends"
    assert attention["plugins"] == []
    assert [row["name"] for row in attention["backends"]] == ATTENTION
    assert [row["name"] for row in registry(data, "MLAPrefillBackendEnum")["backends"]] == MLA
    flash = rows(attention)["FLASH_ATTN"]
    assert flash == {
        "name": "FLASH_ATTN",
        "path": "attn.backends.attention.FlashAttentionBackend",
        "default_path": "attn.backends.attention.FlashAttentionBackend",
        "origin": "builtin",
        "overridden": False,
        "distribution": None,
        "distribution_version": None,
        "status": "ok",
        "reason": None,
        "available": False,
        "requires": ["flash-attn"],
    }
    assert attention["plugins_disabled"] is False
    custom = rows(attention)["CUSTOM"]
    assert custom["path"] is None
    assert custom["default_path"] is None
    assert custom["status"] == "unregistered"
    assert custom["available"] is None
    assert custom["reason"].startswith("AttentionBackendEnum.CUSTOM has no default")


def test_list_json_plugins(list_json, plugins):
    """Plugin backends, overrides and rejected entry points, exactly as DESIGN.md section 4."""
    data = list_json()
    attention = registry(data, "AttentionBackendEnum")
    backends = rows(attention)
    assert [row["name"] for row in attention["backends"]] == [*ATTENTION, "ACME_ATTN"]
    assert backends["FLASH_ATTN"] == {
        "name": "FLASH_ATTN",
        "path": "acme_attn.FlashAttention",
        "default_path": "attn.backends.attention.FlashAttentionBackend",
        "origin": "plugin",
        "overridden": True,
        "distribution": "acme-attn",
        "distribution_version": "1.0",
        "status": "ok",
        "reason": None,
        "available": None,
        "requires": [],
    }
    assert backends["ACME_ATTN"] == {
        "name": "ACME_ATTN",
        "path": "acme_attn.AcmeAttention",
        "default_path": None,
        "origin": "plugin",
        "overridden": False,
        "distribution": "acme-attn",
        "distribution_version": "1.0",
        "status": "ok",
        "reason": None,
        "available": None,
        "requires": [],
    }
    plugin_rows = {(p["distribution"], p["name"]): p for p in attention["plugins"]}
    assert set(plugin_rows) == {
        ("acme-attn", "ACME_ATTN"),
        ("acme-attn", "FLASH_ATTN"),
        ("old-attn", "OLD_ATTN"),
        ("bad-attn", "bad-name"),
        ("bad-attn", "NO_ATTR"),
    }
    assert plugin_rows["old-attn", "OLD_ATTN"] == {
        "name": "OLD_ATTN",
        "value": "old_attn:Old",
        "distribution": "old-attn",
        "distribution_version": "2.0",
        "status": "incompatible",
        "reason": f"requires attn>=99, installed {VERSION}",
    }
    assert plugin_rows["bad-attn", "NO_ATTR"]["status"] == "invalid"
    assert plugin_rows["bad-attn", "NO_ATTR"]["value"] == "bad_attn"
    assert plugin_rows["acme-attn", "FLASH_ATTN"]["status"] == "used"
    assert plugin_rows["acme-attn", "FLASH_ATTN"]["reason"] is None
    mla = registry(data, "MLAPrefillBackendEnum")
    custom = rows(mla)["CUSTOM"]
    assert custom["origin"] == "plugin"
    assert custom["overridden"] is True
    assert custom["status"] == "ok"
    assert custom["path"] == "acme_attn.AcmePrefill"
    assert [p["name"] for p in mla["plugins"]] == ["CUSTOM"]


def test_list_json_runtime_registration(list_json):
    """A runtime registration has origin runtime and null distribution fields."""
    attn.register_backend(
        attn.AttentionBackendEnum.XFORMERS, "attn.backends.attention:CPUAttentionBackend"
    )
    row = rows(registry(list_json("attn.backends"), "AttentionBackendEnum"))["XFORMERS"]
    assert row["origin"] == "runtime"
    assert row["overridden"] is True
    assert row["distribution"] is None
    assert row["distribution_version"] is None
    assert row["path"] == "attn.backends.attention.CPUAttentionBackend"
    assert row["default_path"] == "attn.backends.attention.XFormersBackend"


def test_list_shows_the_runtime_caller(run):
    """The FROM column of a runtime registration names the module that made it."""
    attn.register_backend(
        attn.AttentionBackendEnum.XFORMERS, "attn.backends.attention:CPUAttentionBackend"
    )
    result = run("list", "attn.backends")
    line = next(line for line in result.out.splitlines() if line.startswith("XFORMERS "))
    assert line.split()[:4] == ["XFORMERS", "runtime", __name__, "yes"]


def test_list_does_not_import_plugins(run, list_json, plugins, sentinel):
    """`attn list`, `--json`, `show` and `doctor` read metadata only; no plugin module runs."""
    assert run("list").code == 0
    list_json()
    assert run("show", "FLASH_ATTN").code == 0
    assert run("doctor").code == 1  # old-attn and bad-attn are problems
    assert not sentinel.exists()
    assert "acme_attn" not in sys.modules


def test_list_load_imports_plugins(run, plugins, sentinel):
    """`attn list --load` imports every backend, plugins included."""
    result = run("list", "--load")
    assert result.code == 0, result.err
    assert sentinel.exists()


def test_doctor_load_imports_plugins(run, site, sentinel):
    """`attn doctor --load` imports every plugin backend."""
    site.dist("acme-attn", entry_points={"attn.backends": {"ACME_ATTN": "acme_attn:AcmeAttention"}})
    site.module("acme_attn", PLUGIN_MODULE.format(sentinel=str(sentinel)))
    result = run("doctor", "--load")
    assert result == Result(
        0,
        "attn doctor: no problems found "
        "(2 groups, 1 plugin entry point, every backend imported).\n",
        "",
    )
    assert sentinel.exists()


def test_list_load_marks_broken(run, list_json, broken, normalise):
    """`--load` marks a backend that fails to import broken, with a one-line reason."""
    data = list_json("--load")
    row = rows(registry(data, "AttentionBackendEnum"))["BROKEN_ATTN"]
    assert row["status"] == "broken"
    assert row["reason"] == "RuntimeError: always fails at import"
    result = run("list", "--load", "attn.backends")
    assert result.code == 0
    assert_golden("list-load-broken", normalise(result.out))


def test_list_load_one_line_reason(list_json, site):
    """A multi-line import error becomes a one-line reason."""
    site.dist("multi-attn", entry_points={"attn.backends": {"MULTI_ATTN": "multi:M"}})
    site.module("multi", "raise ValueError('first line\\n\\n  second line')\n")
    row = rows(registry(list_json("--load"), "AttentionBackendEnum"))["MULTI_ATTN"]
    assert row["reason"] == "ValueError: first line second line"


def test_list_load_marks_a_non_backend_broken(list_json, site):
    """--load marks broken a plugin whose class does not derive from the interface."""
    site.dist("wrong-attn", entry_points={"attn.backends": {"WRONG_ATTN": "wrong:W"}})
    site.module("wrong", "class W:\n    pass\n")
    row = rows(registry(list_json("--load"), "AttentionBackendEnum"))["WRONG_ATTN"]
    assert row["status"] == "broken"
    assert row["reason"] == "W does not derive from attn.backends.AttentionBackend"


def test_list_load_changes_status_reason_and_the_imported_availability(list_json, plugins, broken):
    """`--load` changes status and reason, and availability where it imported the class."""
    plain = list_json()
    loaded = list_json("--load")

    def changed(data):
        return {
            (row["name"], row["status"], row["available"], tuple(row["requires"]))
            for entry in data["registries"]
            for row in entry["backends"]
            if row["origin"] == "plugin"
        }

    assert changed(loaded) - changed(plain) == {
        ("FLASH_ATTN", "ok", True, ()),
        ("ACME_ATTN", "ok", True, ()),
        ("CUSTOM", "ok", True, ()),
        ("BROKEN_ATTN", "broken", None, ()),
    }

    def strip(data):
        for entry in data["registries"]:
            for row in entry["backends"]:
                del row["status"], row["reason"], row["available"], row["requires"]
        return data

    assert strip(plain) == strip(loaded)


def test_list_load_table_and_json_agree_on_availability(run, list_json, site):
    """A plugin's kernel, read from its imported class, is the same in the table and the JSON."""
    site.module(
        "kern_mod",
        "from attn import AttentionBackend\n\n\n"
        "class K(AttentionBackend):\n    requires = ('no-such-kernel',)\n",
    )
    site.dist("kern", entry_points={"attn.backends": {"KERN": "kern_mod:K"}})
    row = rows(registry(list_json("--load", "attn.backends"), "AttentionBackendEnum"))["KERN"]
    assert (row["available"], row["requires"]) == (False, ["no-such-kernel"])
    (line,) = [ln for ln in run("list", "--load", "attn.backends").out.splitlines() if "KERN" in ln]
    assert line.split()[-1] == "no"


def test_list_load_reads_the_availability_of_runtime_registrations(list_json, site):
    """--load imports a runtime registration's module, and reports the availability it says."""
    site.module(
        "rtmod",
        "from attn import AttentionBackend\n\n\n"
        "class R(AttentionBackend):\n    requires = ('no-such-kernel',)\n",
    )
    attn.register_backend(attn.AttentionBackendEnum.XFORMERS, "rtmod:R")
    plain = rows(registry(list_json("attn.backends"), "AttentionBackendEnum"))["XFORMERS"]
    assert (plain["available"], plain["requires"]) == (None, [])
    row = rows(registry(list_json("--load", "attn.backends"), "AttentionBackendEnum"))["XFORMERS"]
    assert "rtmod" in sys.modules
    assert row["status"] == "ok"
    assert (row["available"], row["requires"]) == (False, ["no-such-kernel"])


def test_list_disabled_plugins(run, list_json, monkeypatch, plugins, sentinel):
    """With ATTN_DISABLE_PLUGINS on, plugins is empty and the table says plugins are disabled."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "yes")
    data = list_json()
    for entry in data["registries"]:
        assert entry["plugins"] == []
        assert all(row["origin"] == "builtin" for row in entry["backends"])
    result = run("list")
    assert result.code == 0
    disabled = (
        "Plugins are disabled (ATTN_DISABLE_PLUGINS is set): only built-ins and runtime "
        "registrations apply."
    )
    assert result.out.count(disabled + "\n") == 2
    assert "Plugins not in effect" not in result.out
    assert not sentinel.exists()


def test_list_selected_plugins(run, list_json, monkeypatch, plugins):
    """With ATTN_PLUGINS, the table says which distributions are selected; others are disabled."""
    monkeypatch.setenv("ATTN_PLUGINS", "Old_Attn")
    attention = registry(list_json(), "AttentionBackendEnum")
    statuses = {p["name"]: p["status"] for p in attention["plugins"]}
    assert statuses["ACME_ATTN"] == "disabled"
    assert statuses["OLD_ATTN"] == "incompatible"
    result = run("list", "attn.backends")
    assert "Plugins are limited to the distributions in ATTN_PLUGINS=Old_Attn.\n" in result.out
    assert "  ACME_ATTN = 'acme_attn:AcmeAttention' from acme-attn 1.0: disabled\n" in result.out
    assert "    not selected by ATTN_PLUGINS=Old_Attn\n" in result.out


def test_list_conflict_warns_on_stderr(run, conflict, normalise):
    """A conflict lists the loser as shadowed and shows attn's warning as `Warning: ...`."""
    result = run("list", "attn.backends")
    assert result.code == 0
    assert result.err == (
        "Warning: In entry-point group 'attn.backends', 'SHARED_ATTN' is provided by 2 "
        "distributions (share-a 1.0: 'share_a:S', share-b 1.0: 'share_b:S'); share-a 1.0 wins "
        "(same sys.path entry, name sorts first); choose the winner with ATTN_PREFER (nothing "
        "else changes): export ATTN_PREFER=share-a keeps share-a, export ATTN_PREFER=share-b "
        "makes share-b win; or uninstall all but one\n"
    )
    assert_golden("list-conflict", normalise(result.out))


def test_list_unmatched_selection_warns_on_stderr(run, plugins, monkeypatch):
    """An ATTN_PLUGINS name that matches nothing is shown as a warning, once."""
    monkeypatch.setenv("ATTN_PLUGINS", "acme-attn,nope-attn")
    result = run("list")
    assert result.code == 0
    assert result.err == (
        "Warning: ATTN_PLUGINS names 'nope-attn', which is not an installed attn plugin "
        "distribution; use one of: acme-attn, bad-attn, old-attn\n"
    )


# -- colour -------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["list"], ["show", "CUSTOM"], ["doctor"]])
@pytest.mark.parametrize(
    ("env", "tty", "coloured"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),
        ({"TERM": "dumb"}, True, False),
    ],
)
def test_colour_only_on_a_terminal(monkeypatch, plugins, command, env, tty, coloured):  # noqa: PLR0917 - pytest passes by name
    """Colour only when stdout is a terminal, NO_COLOR is unset or empty, and TERM is not dumb."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    stdout = FakeTerminal() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    main(command)
    assert ("\033[" in stdout.getvalue()) is coloured


@pytest.mark.parametrize("command", [["list", "attn.backends"], ["doctor"]])
def test_colour_keeps_columns_aligned(monkeypatch, plugins, command):
    """Coloured statuses are padded, and findings wrapped, as if they were plain."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stdout", FakeTerminal())
    main(command)
    coloured = sys.stdout.getvalue()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    main(command)
    assert re.sub(r"\033\[[0-9;]*m", "", coloured) == sys.stdout.getvalue()


# -- strict mode --------------------------------------------------------------------


STRICT_INCOMPATIBLE = (
    "Error: ATTN_STRICT=1 and the attention backend plugins in group 'attn.backends' have "
    "1 problem(s):\n"
    f"  - old-attn 2.0 provides 'OLD_ATTN' = 'old:O' but is incompatible: requires attn>=99, "
    f"installed {VERSION}\n"
    "Run 'attn doctor' for the fixes.\n"
)


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["list", "--json"],
        ["list", "--load"],
        ["list", "attn.backends"],
        ["show", "FLASH_ATTN"],
        ["show", "OLD_ATTN"],
    ],
)
def test_strict_plugin_problem_exits_1(run, monkeypatch, site, args):
    """Under ATTN_STRICT=1 a plugin problem makes discovery raise: `Error: ...`, exit 1."""
    site.dist(
        "old-attn",
        "2.0",
        entry_points={"attn.backends": {"OLD_ATTN": "old:O"}},
        requires=["attn>=99"],
    )
    monkeypatch.setenv("ATTN_STRICT", "1")
    again = " --registry attn.backends" if "attn.backends" in args else ""  # the one named
    fixes = STRICT_INCOMPATIBLE.replace("'attn doctor'", f"'attn doctor{again}'")
    assert run(*args) == Result(1, "", fixes)


def test_strict_other_registry_still_lists(run, monkeypatch, site, list_json):
    """Strict mode fails only the registries whose group has a problem."""
    site.dist(
        "old-attn",
        "2.0",
        entry_points={"attn.backends": {"OLD_ATTN": "old:O"}},
        requires=["attn>=99"],
    )
    monkeypatch.setenv("ATTN_STRICT", "1")
    data = list_json("attn.mla_prefill_backends")
    assert [r["registry"] for r in data["registries"]] == ["MLAPrefillBackendEnum"]


@pytest.mark.parametrize(
    ("setup", "kind"),
    [
        (
            lambda site: site.dist(
                "loose-attn", entry_points={"attn.backends": {"LOOSE_ATTN": "l:L"}}, requires=[]
            ),
            "declares 'LOOSE_ATTN' = 'l:L' but no requirement on attn",
        ),
        (
            lambda site: site.dist(
                "bad-attn", entry_points={"attn.backends": {"NO_ATTR": "bad_attn"}}
            ),
            "entry point 'NO_ATTR' = 'bad_attn' is invalid",
        ),
        (
            lambda site: site.dist(
                "typo-attn", entry_points={"attn.backend": {"TYPO_ATTN": "typo:T"}}
            ),
            "group 'attn.backend', which looks like a typo of 'attn.backends'",
        ),
    ],
)
def test_strict_other_problems_exit_1(run, monkeypatch, site, setup, kind):
    """Undeclared requirements, invalid entry points, typo'd groups: `attn list` fails in strict."""
    setup(site)
    monkeypatch.setenv("ATTN_STRICT", "on")
    result = run("list")
    assert result.code == 1
    assert result.out == ""
    assert result.err.startswith("Error: ATTN_STRICT=1 and the attention backend plugins")
    assert kind in result.err


def test_strict_conflict_exits_1(run, monkeypatch, conflict):
    """Under strict a conflict raises instead of warning."""
    monkeypatch.setenv("ATTN_STRICT", "1")
    result = run("list")
    assert result.code == 1
    assert "'SHARED_ATTN' is provided by 2 distributions (share-a 1.0: 'share_a:S', share-b" in (
        result.err
    )
    assert "Warning:" not in result.err


def test_strict_load_failure_exits_1(run, monkeypatch, broken, list_json):
    """Under strict, a backend that --load cannot import makes `attn list --load` exit 1."""
    monkeypatch.setenv("ATTN_STRICT", "1")
    assert run("list").code == 0  # the metadata is fine; only importing fails
    result = run("list", "--load")
    assert result.code == 1
    assert "BROKEN_ATTN" in result.out
    assert result.err == (
        "Error: ATTN_STRICT=1 and 1 backend(s) cannot be loaded: AttentionBackendEnum.BROKEN_ATTN "
        "(broken.B, from broken-attn 3.0). Run 'attn doctor --load' for the fixes.\n"
    )
    data = list_json("--load", code=1)
    assert rows(registry(data, "AttentionBackendEnum"))["BROKEN_ATTN"]["status"] == "broken"


def test_plugin_code_closing_stdout_leaves_attns_stderr_open(site, python, monkeypatch):
    """Plugin code that closes sys.stdout under --load (attn's stderr then) loses no error."""
    site.module("closer_mod", "import sys\nsys.stdout.close()\nraise RuntimeError('closed')\n")
    site.dist("closer", entry_points={"attn.backends": {"CLOSER": "closer_mod:B"}})
    monkeypatch.setenv("ATTN_STRICT", "1")
    done = python.run("-m", "attn", "list", "--load", check=False)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ATTN_STRICT=1 and 1 backend(s) cannot be loaded: "), (
        done.stderr
    )


def test_load_failure_without_strict_exits_0(run, broken):
    """Without strict, `attn list --load` exits 0 even when a backend is broken."""
    result = run("list", "--load")
    assert result.code == 0
    assert result.err == ""


def test_doctor_works_under_strict(run, monkeypatch, plugins, normalise):
    """`attn doctor` reports every finding under ATTN_STRICT=1 instead of failing on the first."""
    expected = run("doctor")
    monkeypatch.setenv("ATTN_STRICT", "1")
    result = run("doctor")
    assert result == expected
    assert result.code == 1
    assert result.err == ""


# -- attn show ----------------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["flash-attn installed", "flash-attn missing"])
def flash_attn(request, site):
    """Whether the kernel package flash-attn is installed (module ``flash_attn`` on sys.path)."""
    if request.param:
        site.module("flash_attn.__init__", "raise RuntimeError('attn imported flash_attn')\n")
    return request.param


def test_list_availability_is_the_kernel_package(run, flash_attn):
    """The AVAILABLE column says yes exactly when flash-attn is installed; nothing is imported."""
    lines = run("list", "AttentionBackendEnum").out.splitlines()
    (row,) = [line for line in lines if line.startswith("FLASH_ATTN ")]
    assert row.split() == [
        "FLASH_ATTN",
        "builtin",
        "attn",
        "no",
        "ok",
        "yes" if flash_attn else "no",
    ]
    (sdpa,) = [line for line in lines if line.startswith("TORCH_SDPA ")]
    assert sdpa.split()[-1] == "no"
    assert "flash_attn" not in sys.modules


def test_show_availability_is_the_kernel_package(run, flash_attn):
    """`attn show` says the kernel is installed or not installed, as it is."""
    out = run("show", "FLASH_ATTN", "--registry", "AttentionBackendEnum").out
    state = "installed" if flash_attn else "not installed"
    assert f"  kernel:        needs flash-attn ({state})\n" in out
    assert "flash_attn" not in sys.modules


def test_json_availability_is_the_kernel_package(list_json, flash_attn):
    """`attn list --json` has available true exactly when flash-attn is installed."""
    data = list_json("AttentionBackendEnum")
    backends = rows(registry(data, "AttentionBackendEnum"))
    assert backends["FLASH_ATTN"]["available"] is flash_attn
    assert backends["TORCH_SDPA"]["available"] is False
    assert backends["NO_ATTENTION"]["available"] is True
    assert "flash_attn" not in sys.modules


def test_show_builtin_golden(run, normalise):
    """`attn show FLASH_ATTN` details the built-in in both registries."""
    result = run("show", "FLASH_ATTN")
    assert result.code == 0
    assert result.err == ""
    assert_golden("show-builtin", normalise(result.out))


def test_show_plugin_override_golden(run, plugins, normalise):
    """`attn show` names the plugin in effect, the built-in default and every claimant."""
    result = run("show", "FLASH_ATTN", "--registry", "attn.backends")
    assert result.code == 0
    assert result.err == ""
    assert_golden("show-override", normalise(result.out))


def test_show_conflict_golden(run, conflict, normalise):
    """`attn show` lists every claimant of a contested name, winner first."""
    result = run("show", "SHARED_ATTN")
    assert result.code == 0
    assert result.err.startswith("Warning: In entry-point group 'attn.backends', 'SHARED_ATTN'")
    assert_golden("show-conflict", normalise(result.out))


def test_show_rejected_plugin_golden(run, plugins, normalise):
    """A name claimed only by a plugin not in effect is shown with its reason, exit 0."""
    result = run("show", "OLD_ATTN")
    assert result.code == 0
    assert_golden("show-rejected", normalise(result.out))


def test_show_custom_golden(run, plugins, normalise):
    """CUSTOM: unregistered in one registry, provided by a plugin in the other."""
    result = run("show", "CUSTOM")
    assert result.code == 0
    assert_golden("show-custom", normalise(result.out))


def test_show_plugin_added_backend(run, plugins):
    """A plugin-added name has no built-in default and unknown availability."""
    result = run("show", "ACME_ATTN")
    assert result.code == 0
    assert "  default:       none: ACME_ATTN is not a built-in\n" in result.out
    assert "  origin:        plugin, from acme-attn 1.0\n" in result.out
    assert "  kernel:        unknown: attn does not import a backend's code" in result.out
    assert "MLAPrefillBackendEnum" not in result.out


def test_show_a_plugin_that_declares_no_attn_requirement(run, site):
    """A plugin without a requirement on attn: show says its compatibility cannot be checked."""
    site.dist("loose-attn", "1.0", entry_points={"attn.backends": {"LOOSE": "m:C"}}, requires=())
    result = run("show", "LOOSE")
    assert result.code == 0
    assert "none declared (compatibility cannot be checked)" in result.out


def test_show_does_not_call_unread_requirements_undeclared(run, site):
    """A plugin whose METADATA cannot be read: its requirements are unknown, not 'none declared'."""
    info = site.dist("unread-attn", "1.0", entry_points={"attn.backends": {"UNREAD": "m:C"}})
    (info / "METADATA").write_bytes(b"Name: unread-attn\nVersion: 1.0\nRequires-Dist: attn\xff\n")
    result = run("show", "UNREAD")
    assert "      requires:  unknown: metadata unread\n" in result.out
    assert "      reason:    the distribution's metadata cannot be read: METADATA" in result.out


@pytest.mark.parametrize(
    ("controls", "reason", "fix"),
    [
        (
            {"ATTN_PLUGINS": "other"},
            "not selected by ATTN_PLUGINS=other",
            "export ATTN_PLUGINS=acme-attn",  # not other: it matches nothing, a doctor problem
        ),
        (
            {"ATTN_BLOCK_PLUGINS": "x, acme_attn"},
            "blocked by ATTN_BLOCK_PLUGINS=x,acme_attn",
            "export ATTN_BLOCK_PLUGINS=x",
        ),
        (
            {"ATTN_BLOCK_PLUGINS": "Acme.Attn"},
            "blocked by ATTN_BLOCK_PLUGINS=Acme.Attn",
            "unset ATTN_BLOCK_PLUGINS",
        ),
        (
            {"ATTN_BLOCK_PLUGINS": "acme-attn", "ATTN_PLUGINS": "x"},
            "blocked by ATTN_BLOCK_PLUGINS=acme-attn",
            "unset ATTN_BLOCK_PLUGINS and export ATTN_PLUGINS=acme-attn",
        ),
    ],
)
@pytest.mark.usefixtures("plugins")
def test_a_name_only_left_out_plugins_claim_gives_the_control_fix(
    run, monkeypatch, controls, reason, fix
):
    """Doctor checks no left-out plugin: show and the lookup error name the setting instead."""
    for name, value in controls.items():
        monkeypatch.setenv(name, value)
    result = run("show", "ACME_ATTN")
    status = f"status: not in effect: no claimant is used; {fix} to use it default:"
    assert status in " ".join(result.out.split())
    with pytest.raises(attn.UnknownBackendError) as info:
        attn.AttentionBackendEnum["ACME_ATTN"]
    provides = "acme-attn 1.0 provides 'ACME_ATTN' = 'acme_attn:AcmeAttention'"
    assert str(info.value).splitlines()[1:] == [
        f"{provides} but is disabled: {reason} ({fix} to use it)"
    ]
    # Pasted into a shell, the fix lets the plugin in (a bare "set X=y" would not change X).
    python = f"exec {sys.executable} -c 'import os; print(dict(os.environ))'"
    dump = f"{fix.replace(' and ', '; ')}; {python}"
    env = ast.literal_eval(
        subprocess.run(["sh", "-c", dump], capture_output=True, check=True).stdout.decode()
    )
    for name in ("ATTN_PLUGINS", "ATTN_BLOCK_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
        if name in env:
            monkeypatch.setenv(name, env[name])
    with warnings.catch_warnings(record=True) as caught:  # and keeps no name matching nothing
        warnings.simplefilter("always")
        attn.AttentionBackendEnum.refresh()
        assert attn.AttentionBackendEnum["ACME_ATTN"].name == "ACME_ATTN"
    assert not [w for w in caught if "not an installed attn plugin" in str(w.message)]


@pytest.mark.parametrize(
    ("controls", "reason"),
    [
        ({"ATTN_PLUGINS": "acme-attn"}, "not selected by ATTN_PLUGINS=acme-attn"),
        ({"ATTN_BLOCK_PLUGINS": "old-attn"}, "blocked by ATTN_BLOCK_PLUGINS=old-attn"),
    ],
)
@pytest.mark.usefixtures("plugins")
def test_a_left_out_plugin_that_would_be_rejected_anyway_gets_no_let_it_in_fix(
    run, monkeypatch, controls, reason
):
    """Letting in an incompatible plugin would not make it usable: say why, not 'to use it'."""
    for name, value in controls.items():
        monkeypatch.setenv(name, value)
    rejected = "requires attn>=99, installed 0.1.0"
    result = run("show", "OLD_ATTN")
    status = f"no claimant is used; let in, old-attn 2.0 would be rejected too: {rejected}"
    assert status in " ".join(result.out.split())
    with pytest.raises(attn.UnknownBackendError) as info:
        attn.AttentionBackendEnum["OLD_ATTN"]
    line = f"old-attn 2.0 provides 'OLD_ATTN' = 'old_attn:Old' but is disabled: {reason}; "
    assert str(info.value).splitlines()[1:] == [
        f"{line}let in, it would be rejected too: {rejected}"
    ]


@pytest.mark.usefixtures("plugins")
def test_show_offers_the_left_out_claimant_that_would_be_used(run, site, monkeypatch):
    """When the first left-out claimant would be rejected, show lets in one that would not be."""
    site.dist("zz-attn", "1.0", entry_points={"attn.backends": {"OLD_ATTN": "zz_attn:B"}})
    monkeypatch.setenv("ATTN_PLUGINS", "acme-attn")
    status = " ".join(run("show", "OLD_ATTN").out.split())
    assert "no claimant is used; export ATTN_PLUGINS=acme-attn,zz-attn to use it" in status
    with pytest.raises(attn.UnknownBackendError) as info:  # each claimant's line, as before
        attn.AttentionBackendEnum["OLD_ATTN"]
    assert "(export ATTN_PLUGINS=acme-attn,zz-attn to use it)" in str(info.value)


@pytest.mark.usefixtures("plugins")
def test_a_left_out_plugin_whose_entry_point_is_invalid_names_it(run, monkeypatch):
    """Let in, it would be rejected for its entry point: the line says why (it names the value)."""
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "bad-attn,old-attn")
    why = "it would be rejected too: its entry point is invalid: no attribute part; expected"
    with pytest.raises(attn.UnknownBackendError) as info:
        attn.AttentionBackendEnum["NO_ATTR"]
    assert str(info.value).splitlines()[1] == (
        "bad-attn 1.5 provides 'NO_ATTR' = 'bad_attn' but is disabled: blocked by "
        f"ATTN_BLOCK_PLUGINS=bad-attn,old-attn; let in, {why} 'module:attr'"
    )
    status = " ".join(run("show", "bad-name").out.split())
    assert "rejected too: its entry point is invalid: backend names must be Python identifiers" in (
        status
    )


def test_a_left_out_plugin_rejected_twice_over_says_what_its_row_would(site, monkeypatch):
    """Let in, the row would be incompatible (it comes before invalid): the line says that."""
    site.dist(
        "both-attn", "1.0", entry_points={"attn.backends": {"BOTH": "m"}}, requires=["attn>=99"]
    )
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "both-attn")
    with pytest.raises(attn.UnknownBackendError) as info:
        attn.AttentionBackendEnum["BOTH"]
    why = "let in, it would be rejected too: requires attn>=99, installed 0.1.0"
    assert str(info.value).splitlines()[1].endswith(f"ATTN_BLOCK_PLUGINS=both-attn; {why}")


def test_show_runtime_registration(run):
    """A runtime registration is shown with the module that made it."""
    attn.register_mla_prefill_backend(
        attn.MLAPrefillBackendEnum.CPU, "attn.backends.mla_prefill:ZenCPUMLAPrefillBackend"
    )
    result = run("show", "CPU")
    assert result.code == 0
    assert f"  origin:        runtime, registered by {__name__}\n" in result.out
    assert "  overridden:    yes\n" in result.out


def test_show_disabled_plugins(run, plugins, monkeypatch):
    """With plugins disabled, show says the claimants were not read."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    result = run("show", "FLASH_ATTN", "--registry", "AttentionBackendEnum")
    assert result.code == 0
    assert "  claimants:     not read: ATTN_DISABLE_PLUGINS is set\n" in result.out
    assert "  origin:        builtin, from attn " in result.out


def test_show_disabled_plugins_names_the_version_of_the_attn_that_runs(run, sites, monkeypatch):
    """A stale attn metadata copy earlier on sys.path is not the one installed with the code."""
    stale, installed = sites.new("stale"), sites.new("installed")
    stale.dist("attn", "0.0.9")
    installed.dist("attn", "0.2.0")
    state = state_of(attn.AttentionBackendEnum)  # its code imported from where 0.2.0 is installed
    monkeypatch.setattr(state, "config", state.config._replace(host_root=str(installed.root)))
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    result = run("show", "TORCH_SDPA")
    assert "  origin:        builtin, from attn 0.2.0\n" in result.out


@pytest.mark.parametrize(
    ("selector", "present", "absent"),
    [
        ("AttentionBackendEnum", "AttentionBackendEnum", "MLAPrefillBackendEnum"),
        ("attn.backends", "AttentionBackendEnum", "MLAPrefillBackendEnum"),
        ("MLAPrefillBackendEnum", "MLAPrefillBackendEnum", "AttentionBackendEnum"),
        ("attn.mla_prefill_backends", "MLAPrefillBackendEnum", "AttentionBackendEnum"),
    ],
)
def test_show_registry_option(run, selector, present, absent):
    """--registry picks one registry by class name or group."""
    result = run("show", "FLASH_ATTN", "--registry", selector)
    assert result.code == 0
    assert result.out.startswith(f"FLASH_ATTN in {present} (entry-point group ")
    assert f" in {absent} " not in result.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["FLASH_ATN"],
            (
                "Error: unknown backend 'FLASH_ATN' in AttentionBackendEnum or "
                "MLAPrefillBackendEnum.\n"
                "Did you mean 'FLASH_ATTN', 'FLASH_ATTN_MLA' or 'FLASH_SINK_ATTN'?\n"
            ),
        ),
        (
            ["flash_attn"],
            (
                "Error: unknown backend 'flash_attn' in AttentionBackendEnum or "
                "MLAPrefillBackendEnum.\n"
                "Did you mean 'FLASH_ATTN', 'FLASH_ATTN_MLA' or 'FLASH_SINK_ATTN'?\n"
            ),
        ),
        (
            ["TRITON_RAGGED", "--registry", "attn.backends"],
            (
                "Error: unknown backend 'TRITON_RAGGED' in AttentionBackendEnum.\n"
                "'TRITON_RAGGED' is a backend of MLAPrefillBackendEnum: 'attn show TRITON_RAGGED' "
                "shows it.\n"  # not a typo: --registry left its registry out
            ),
        ),
        (
            ["XFORMERS", "--registry", "MLAPrefillBackendEnum"],
            (
                "Error: unknown backend 'XFORMERS' in MLAPrefillBackendEnum.\n"
                "'XFORMERS' is a backend of AttentionBackendEnum: 'attn show XFORMERS' shows it.\n"
            ),
        ),
        (
            ["TRITON_RAGED", "--registry", "attn.backends"],
            (
                "Error: unknown backend 'TRITON_RAGED' in AttentionBackendEnum.\n"
                "Did you mean 'TRITON_MLA' or 'TRITON_ATTN'?\n"
            ),
        ),
        (
            ["NOTHING_LIKE_IT"],
            (
                "Error: unknown backend 'NOTHING_LIKE_IT' in AttentionBackendEnum or "
                "MLAPrefillBackendEnum.\n"
            ),
        ),
    ],
)
def test_show_unknown_name_exits_1(run, args, message):
    """An unknown name exits 1 with a clear message and close matches."""
    result = run("show", *args)
    assert result == Result(1, "", message + DOCTOR_HINT)


def test_show_unknown_name_with_plugins_disabled_says_so(run, plugins, monkeypatch):
    """The plugin's name is unknown because discovery is off: say that, not 'run doctor'."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    result = run("show", "ACME_ATTN")
    assert result == Result(
        1,
        "",
        "Error: unknown backend 'ACME_ATTN' in AttentionBackendEnum or MLAPrefillBackendEnum.\n"
        "Did you mean 'ROCM_ATTN', 'CPU_ATTN' or 'TREE_ATTN'?\n"
        "Plugins are disabled by ATTN_DISABLE_PLUGINS; unset it to use installed plugins.\n",
    )


def test_show_suggests_plugin_names(run, plugins):
    """Suggestions include names that plugins add."""
    result = run("show", "ACME")
    assert result.code == 1
    assert "Did you mean 'ACME_ATTN'?\n" in result.err


def test_show_suggests_names_that_differ_only_by_case(run, site):
    """A plugin's flash_attn does not hide the built-in FLASH_ATTN from the suggestions."""
    site.dist("lower", entry_points={"attn.backends": {"flash_attn": "lower:B"}})
    result = run("show", "FLASH_ATN", "--registry", "attn.backends")
    assert result.code == 1
    (line,) = [x for x in result.err.splitlines() if x.startswith("Did you mean")]
    assert "'FLASH_ATTN'" in line
    assert "'flash_attn'" in line


# -- attn doctor --------------------------------------------------------------------


NOT_IMPORTED = (
    "Not imported: {builtin} built-in and {plugin} (import failures are not checked).\n"
    "Run 'attn doctor --load' to import every backend (it runs plugin code).\n"
)


def test_doctor_clean(run):
    """With no plugin, doctor says it found no problem, what it did not import, and exits 0."""
    assert run("doctor") == Result(
        0,
        NOT_IMPORTED.format(builtin=29, plugin="0 plugin backends")
        + "attn doctor: no problems found (2 groups, 0 plugin entry points).\n",
        "",
    )


def test_doctor_clean_beside_other_projects_groups(run, site, triton):
    """triton, torch, jax and keras groups installed: doctor reports nothing and exits 0."""
    for project in ("torch", "jax", "keras"):
        site.dist(f"{project}-ext", requires=(), entry_points={f"{project}.backends": {"x": "m"}})
    assert run("doctor") == Result(
        0,
        NOT_IMPORTED.format(builtin=29, plugin="0 plugin backends")
        + "attn doctor: no problems found (2 groups, 0 plugin entry points).\n",
        "",
    )


def test_doctor_clean_load(run):
    """`doctor --load` imports every built-in; all of them load."""
    assert run("doctor", "--load") == Result(
        0,
        "attn doctor: no problems found (2 groups, 0 plugin entry points, "
        "every backend imported).\n",
        "",
    )


def test_doctor_clean_plugin(run, site):
    """A well-formed plugin with a requirement on attn is no problem."""
    site.dist("fine-attn", entry_points={"attn.backends": {"FINE": "fine:F"}})
    assert run("doctor").code == 0


def test_doctor_golden(run, plugins, conflict, broken, normalise):
    """`attn doctor --load` prints one finding per problem with its fix, and exits 1."""
    result = run("doctor", "--load")
    assert result.code == 1
    assert result.err == ""
    assert_golden("doctor", normalise(result.out))


def collapse(text: str) -> str:
    """*text* with every run of whitespace made one space, to compare wrapped output."""
    return " ".join(text.split())


def _typo(group):
    def setup(sites):
        sites.new().dist("typo-attn", entry_points={group: {"TYPO_ATTN": "typo:T"}})

    return setup


def _duplicate(sites):
    sites.new("first").dist("twice-attn", "2.0", entry_points={"attn.backends": {"T": "t:T"}})
    sites.new("second").dist("twice-attn", "1.0", entry_points={"attn.backends": {"T": "t:T"}})


def _empty(sites):
    sites.new("first").dist(
        "empty-attn", "1.0", entry_points={"attn.backends": {"E": "e:E"}}, metadata=False
    )
    sites.new("second").dist("empty-attn", "1.0", entry_points={"attn.backends": {"E": "e:E"}})


def _shadowed(sites):
    site = sites.new()
    site.dist("b-attn", entry_points={"attn.backends": {"S": "b:S"}})
    site.dist("a-attn", entry_points={"attn.backends": {"S": "a:S"}})


PROBLEMS = [
    pytest.param(
        lambda sites: sites.new().dist(
            "bad-attn", entry_points={"attn.backends": {"bad-name": "m:C"}}
        ),
        "invalid, attn.backends",
        ["bad-attn 1.0", "'bad-name'"],
        id="invalid-name",
    ),
    pytest.param(
        lambda sites: sites.new().dist(
            "bad-attn", entry_points={"attn.mla_prefill_backends": {"X": "m"}}
        ),
        "invalid, attn.mla_prefill_backends",
        ["bad-attn 1.0", "'m'"],
        id="invalid-value",
    ),
    pytest.param(
        lambda sites: sites.new().dist(
            "old-attn", entry_points={"attn.backends": {"O": "o:O"}}, requires=["attn<0.0.1"]
        ),
        "incompatible, attn.backends",
        ["old-attn 1.0", "requires attn<0.0.1, installed <version>"],
        id="incompatible",
    ),
    pytest.param(
        _shadowed,
        "shadowed, attn.backends",
        ["a-attn 1.0", "b-attn 1.0"],
        id="shadowed",
    ),
    pytest.param(
        lambda sites: sites.new().dist(
            "loose-attn", entry_points={"attn.backends": {"L": "l:L"}}, requires=[]
        ),
        "undeclared-requirement, attn.backends",
        ["loose-attn 1.0"],
        id="undeclared",
    ),
    pytest.param(
        _typo("attn.backend"), "typo-group, attn.backends", ["'attn.backend'"], id="attn.backend"
    ),
    pytest.param(
        _typo("attn-backends"), "typo-group, attn.backends", ["'attn-backends'"], id="attn-backends"
    ),
    pytest.param(
        _typo("attn_backends"), "typo-group, attn.backends", ["'attn_backends'"], id="attn_backends"
    ),
    pytest.param(
        _typo("attn.mla_prefill_backend"),
        "typo-group, attn.mla_prefill_backends",
        ["'attn.mla_prefill_backend'"],
        id="attn.mla_prefill_backend",
    ),
    pytest.param(
        _duplicate,
        "duplicate-metadata",
        ["twice-attn", "2.0", "1.0", "<tmp>/0-first/", "<tmp>/1-second/"],
        id="duplicate-metadata",
    ),
    pytest.param(_empty, "empty-metadata", ["empty-attn", "<tmp>/0-first/"], id="empty-metadata"),
]


@pytest.mark.parametrize(("setup", "heading", "culprits"), PROBLEMS)
def test_doctor_problems(run, sites, normalise, setup, heading, culprits):  # noqa: PLR0917 - pytest passes by name
    """Each kind of problem is one finding naming its culprit, with its fix; exit 1."""
    setup(sites)
    result = run("doctor")
    assert result.code == 1
    assert result.err == ""
    out = normalise(result.out)
    assert out.startswith(f"problem ({heading}): ")
    assert [line for line in out.splitlines() if line.startswith("problem (")] == [
        out.splitlines()[0]
    ]
    assert "\n  fix: " in out
    first = collapse(out.split("\n  fix: ")[0])
    for culprit in culprits:
        assert culprit in first
    assert re.search(r"\nattn doctor: 1 problem \(2 groups, \d plugin entry points?\)\.\n$", out)


@pytest.mark.parametrize("setup", [pytest.param(p.values[0], id=p.id) for p in PROBLEMS])
def test_doctor_renders_each_finding_exactly(request, run, sites, normalise, setup):
    """Doctor's whole output for each kind of problem, word for word (tests/cli/doctor-*.txt)."""
    setup(sites)
    assert_golden(f"doctor-{request.node.callspec.id}", normalise(run("doctor").out))


def test_doctor_golden_wraps_at_100_columns(run, plugins, conflict, broken):
    """Doctor's lines fit in 100 columns except for unbreakable words such as paths."""
    result = run("doctor", "--load")
    for line in result.out.splitlines():
        assert len(line) <= 100 or " " not in line.strip()


def test_doctor_copies_of_non_plugins_are_notes_and_of_a_plugin_a_problem(run, sites):
    """Older copies of two distributions that are no plugin: notes, once each, exit 0.

    One declares console scripts only, the other entry points in a group that
    is no typo of attn's (``triton.backends``). An older copy of a plugin then
    makes doctor exit 1.
    """
    first, second = sites.new("first"), sites.new("second")
    others = {
        "tool": {"console_scripts": {"tool": "tool.cli:main"}},
        "kernels": {"triton.backends": {"nvidia": "kernels.nvidia"}},
    }
    for name, entry_points in others.items():
        first.dist(name, "2.0", entry_points=entry_points)
        second.dist(name, "1.0", entry_points=entry_points)
    first.dist("plug-attn", "2.0", entry_points={"attn.backends": {"PLUG": "plug:P"}})
    healthy = run("doctor")
    assert healthy.code == 0, healthy.out
    notes = [line for line in healthy.out.splitlines() if line.startswith("note (")]
    assert sorted(line.split(" is installed twice")[0] for line in notes) == [
        "note (non-plugin-copy): kernels",
        "note (non-plugin-copy): tool",
    ]
    assert "so no backend comes from it" in collapse(healthy.out)
    assert "problem (" not in healthy.out
    payload = json.loads(run("doctor", "--json").out)
    assert (payload["problems"], payload["notes"]) == (0, 2)
    assert {f["severity"] for f in payload["findings"]} == {"note"}

    second.dist("plug-attn", "1.0", entry_points={"attn.backends": {"PLUG": "plug:P"}})
    for registry in (attn.AttentionBackendEnum, attn.MLAPrefillBackendEnum):
        state_of(registry).reset()  # discovery again, as in a new process
    duplicated = run("doctor")
    assert duplicated.code == 1
    assert "problem (duplicate-metadata): plug-attn is installed twice" in duplicated.out
    assert duplicated.out.count("note (non-plugin-copy)") == 2


def test_doctor_does_not_note_a_virtualenvs_copies_over_its_base_pythons(run, sites, monkeypatch):
    """--system-site-packages: the venv's pip over the base's is what it means, not a note."""
    venv, base = sites.new("venv"), sites.new("base")
    venv.dist("tool", "2.0", entry_points={"console_scripts": {"tool": "tool.cli:main"}})
    base.dist("tool", "1.0", entry_points={"console_scripts": {"tool": "tool.cli:main"}})
    monkeypatch.setattr(sys, "prefix", str(venv.root))
    monkeypatch.setattr(sys, "base_prefix", str(base.root))
    assert "note (non-plugin-copy)" not in run("doctor").out
    monkeypatch.setattr(sys, "base_prefix", str(venv.root))  # the same copies outside a venv
    for registry in (attn.AttentionBackendEnum, attn.MLAPrefillBackendEnum):
        state_of(registry).reset()
    assert "note (non-plugin-copy): tool is installed twice" in run("doctor").out


def test_doctor_unmatched_selection(run, site, monkeypatch):
    """A name in ATTN_PLUGINS that matches no installed plugin is a problem, reported once."""
    site.dist("fine-attn", entry_points={"attn.backends": {"FINE": "fine:F"}})
    monkeypatch.setenv("ATTN_PLUGINS", "fine-attn,nope-attn")
    result = run("doctor")
    assert result.code == 1
    assert result.out.count("nope-attn") == 1
    assert collapse(result.out).startswith(
        "problem (unmatched-selection): ATTN_PLUGINS names 'nope-attn', which is not an "
        "installed attn plugin distribution fix: use one of: fine-attn "
    )


def test_doctor_case_collision_is_a_note(run, site):
    """A plugin name that differs from a built-in only by case is a note, not a problem."""
    site.dist("lower-attn", entry_points={"attn.backends": {"flash_attn": "lower:F"}})
    result = run("doctor")
    assert result.code == 0
    assert result.err == ""
    assert result.out.startswith("note (case-collision, attn.backends): lower-attn 1.0 ")
    assert "'flash_attn'" in result.out
    assert "'FLASH_ATTN'" in result.out
    assert result.out.endswith(
        "attn doctor: no problems found, 1 note (2 groups, 1 plugin entry point).\n"
    )


def test_doctor_load_failure(run, broken):
    """Without --load doctor passes a plugin that fails at import, and says so; --load finds it."""
    assert run("doctor") == Result(
        0,
        NOT_IMPORTED.format(builtin=29, plugin="1 plugin backend")
        + "attn doctor: no problems found (2 groups, 1 plugin entry point).\n",
        "",
    )
    result = run("doctor", "--load")
    assert result == Result(
        1,
        "problem (load-failure, attn.backends): broken-attn 3.0 provides 'BROKEN_ATTN' = "
        "'broken:B', which\n"
        "    cannot be loaded: RuntimeError: always fails at import\n"
        "  fix: fix or uninstall broken-attn, or block it with "
        "export ATTN_BLOCK_PLUGINS=broken-attn\n"
        "attn doctor: 1 problem (2 groups, 1 plugin entry point, every backend imported).\n",
        "",
    )


def test_doctor_disabled_plugins(run, plugins, monkeypatch):
    """With plugins disabled, doctor says nothing was checked, and exits 0."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "true")
    assert run("doctor") == Result(
        0,
        "Plugins are disabled (ATTN_DISABLE_PLUGINS is set): no plugin in attn.backends or\n"
        "    attn.mla_prefill_backends was checked.\n"
        + NOT_IMPORTED.format(builtin=29, plugin="0 plugin backends")
        + "attn doctor: no problems found (2 groups, 0 plugin entry points).\n",
        "",
    )


def test_doctor_problems_come_before_notes(run, site):
    """Problems are listed first, then notes; the summary counts both."""
    site.dist("lower-attn", entry_points={"attn.backends": {"flash_attn": "lower:F"}}, requires=[])
    result = run("doctor")
    assert result.code == 1
    assert result.out.index("problem (") < result.out.index("note (")
    assert result.out.endswith(
        "attn doctor: 1 problem and 1 note (2 groups, 1 plugin entry point).\n"
    )


# -- attn doctor --json -------------------------------------------------------------

DOCTOR_SCHEMA = _ROOT / "docs" / "attn-doctor.schema.json"


@pytest.fixture(scope="session")
def doctor_validator():
    """A validator for `attn doctor --json`, from the schema shipped in docs/."""
    return schema_validator(DOCTOR_SCHEMA)


@pytest.fixture
def doctor_json(run, doctor_validator):
    """Run ``attn doctor --json ARGS``; check the exit code and the schema; return the data."""

    def doctor_json(*args: str, code: int) -> dict:
        result = run("doctor", "--json", *args)
        assert (result.code, result.err) == (code, "")
        data = json.loads(result.out)
        doctor_validator.validate(data)
        return data

    return doctor_json


def test_doctor_json_clean(doctor_json):
    """With no plugin, the document says so, with the counts the text prints."""
    assert doctor_json(code=0) == {
        "attn_version": VERSION,
        "loaded": False,
        "plugins_disabled": False,
        "groups": ["attn.backends", "attn.mla_prefill_backends"],
        "plugin_entry_points": 0,
        "not_imported": {"builtin": 29, "plugin": 0},
        "problems": 0,
        "notes": 0,
        "findings": [],
    }


def test_doctor_json_findings(doctor_json, plugins, conflict, broken):
    """Every finding of the text output is one object with kind, group, subject, message, fix."""
    data = doctor_json("--load", code=1)
    assert (data["loaded"], data["not_imported"], data["problems"], data["notes"]) == (
        True,
        {"builtin": 0, "plugin": 0},
        6,
        0,
    )
    kinds = [(f["severity"], f["kind"], f["group"], f["subject"]) for f in data["findings"]]
    assert kinds == [
        ("problem", "invalid", "attn.backends", "bad-name"),
        ("problem", "invalid", "attn.backends", "NO_ATTR"),
        ("problem", "incompatible", "attn.backends", "OLD_ATTN"),
        ("problem", "shadowed", "attn.backends", "SHARED_ATTN"),
        ("problem", "load-failure", "attn.backends", "BROKEN_ATTN"),
        ("problem", "load-failure", "attn.backends", "SHARED_ATTN"),
    ]
    incompatible = data["findings"][2]
    assert incompatible["message"] == (
        f"old-attn 2.0 provides 'OLD_ATTN' = 'old_attn:Old' but is incompatible: requires "
        f"attn>=99, installed {VERSION}"
    )
    assert incompatible["fix"].startswith("install a release of old-attn that supports attn ")


def test_doctor_json_counts_what_it_did_not_import(doctor_json, broken):
    """Without --load, a plugin that fails at import is no finding; not_imported counts it."""
    data = doctor_json(code=0)
    assert (data["loaded"], data["not_imported"], data["findings"]) == (
        False,
        {"builtin": 29, "plugin": 1},
        [],
    )


def test_doctor_json_global_findings_have_no_group(doctor_json, site, monkeypatch):
    """A finding about the environment (an unmatched ATTN_PLUGINS name) has group null."""
    site.dist("fine-attn", entry_points={"attn.backends": {"FINE": "fine:F"}})
    monkeypatch.setenv("ATTN_PLUGINS", "fine-attn,nosuch")
    (finding,) = doctor_json(code=1)["findings"]
    assert (finding["kind"], finding["group"], finding["subject"]) == (
        "unmatched-selection",
        None,
        "nosuch",
    )


def test_doctor_schema_names_every_finding_kind():
    """The schema's kinds are exactly the kinds doctor can report."""
    schema = json.loads(DOCTOR_SCHEMA.read_text(encoding="utf-8"))
    kinds = schema["properties"]["findings"]["items"]["properties"]["kind"]["enum"]
    assert sorted(kinds) == sorted(c.value for c in FINDING_CODES)


# -- attn show --load, and names a plugin declares where attn does not read --------


def test_show_load_marks_a_broken_plugin(run, broken, plugins, sentinel):
    """`attn show NAME --load` imports that backend only and shows why it cannot load."""
    result = run("show", "BROKEN_ATTN", "--load")
    assert result.code == 0
    assert (
        "  status:        broken: RuntimeError: always fails at import; 'attn doctor --load' "
        "says how to fix\n                 it\n"
    ) in result.out
    assert not sentinel.exists()  # acme_attn, another plugin, was not imported


def test_show_load_of_a_broken_plugin_does_not_blame_listing_for_the_kernel(run, broken):
    """With --load attn did import the plugin: its kernel is unknown because the class failed."""
    result = run("show", "BROKEN_ATTN", "--load")
    assert "  kernel:        unknown (see status)\n" in result.out


def test_show_without_load_says_the_plugin_was_not_imported(run, broken):
    """Without --load, a plugin's status says it was not imported and how to check it."""
    result = run("show", "BROKEN_ATTN")
    assert (
        "  status:        ok (not imported: 'attn show BROKEN_ATTN --load' imports and checks it)\n"
    ) in result.out


def test_show_load_reads_the_plugin_kernel(run, site):
    """With --load, the plugin's class is imported, so show says which kernel packages it needs."""
    site.dist("kern-attn", entry_points={"attn.backends": {"KERN": "kern:K"}})
    site.dist("kern2-attn", entry_points={"attn.backends": {"KERN2": "kern2:K"}})
    site.module(
        "kern",
        "from attn import AttentionBackend\n\n"
        "class K(AttentionBackend):\n    requires = ('no-such-kernel-lib',)\n",
    )
    assert (
        "  kernel:        unknown: attn does not import a backend's code" in run("show", "KERN").out
    )
    result = run("show", "KERN", "--load")
    assert "  kernel:        needs no-such-kernel-lib (not installed)\n" in result.out
    # What its own missing_requirements() names beyond requires (a driver) is shown as well.
    site.module(
        "kern2",
        "from attn import AttentionBackend\n\nclass K(AttentionBackend):\n"
        "    requires = ('packaging',)\n\n    @classmethod\n"
        "    def missing_requirements(cls):\n        return ['a CUDA 12 driver']\n",
    )
    result = run("show", "KERN2", "--load")
    assert (
        "  kernel:        needs packaging (installed), a CUDA 12 driver (missing)\n" in result.out
    )


def test_show_load_of_a_good_plugin(run, plugins, sentinel):
    """`attn show NAME --load` of a plugin that imports says ok, without the hint."""
    result = run("show", "ACME_ATTN", "--load")
    assert result.code == 0
    assert "  status:        ok\n" in result.out
    assert sentinel.exists()


@pytest.fixture
def misgrouped(site):
    """vendor-attn declares VENDOR_FAST in 'attn.backend', a typo of 'attn.backends'."""
    site.dist("vendor-attn", "1.2", entry_points={"attn.backend": {"VENDOR_FAST": "v:B"}})
    return site


def test_show_names_a_declaration_in_a_typo_group(run, site):
    """`attn show` of a built-in that a plugin overrides in a misspelt group says so.

    It said "claimants: none: no plugin declares 'FLASH_ATTN'" and nothing more.
    """
    site.dist("vendor-attn", "1.2", entry_points={"attn.backend": {"FLASH_ATTN": "v:B"}})
    result = run("show", "FLASH_ATTN", "--registry", "attn.backends")
    assert result.code == 0
    claimants = " ".join(result.out.split()).partition("claimants: ")[2]
    assert claimants == (
        "none: no plugin declares 'FLASH_ATTN'; not read: vendor-attn 1.2 declares it ('v:B') in "
        "'attn.backend', a typo of the group"
    )
    assert (
        "not read" not in run("show", "FLASH_ATTN", "--registry", "attn.mla_prefill_backends").out
    )


def test_list_names_entry_points_of_a_typo_group(run, misgrouped):
    """`attn list` says which entry points sit in a misspelt group and points at doctor."""
    result = run("list", "AttentionBackendEnum")
    assert result.code == 0
    assert result.out.endswith(
        "Not read (misspelt entry-point group, a typo of 'attn.backends'):\n"
        "  VENDOR_FAST = 'v:B' from vendor-attn 1.2, in group 'attn.backend'\n"
        "  'attn doctor' says how to fix it.\n"
    )
    assert "Not read" not in run("list", "MLAPrefillBackendEnum").out
    registries = json.loads(run("list", "--json").out)["registries"]
    assert [r["misgrouped"] for r in registries] == [
        [
            {
                "name": "VENDOR_FAST",
                "value": "v:B",
                "from": "vendor-attn 1.2",
                "group": "attn.backend",
            }
        ],
        [],  # a typo of attn.backends only
    ]


@pytest.mark.parametrize("name", ["VENDOR_FAST", "TRITON_ATTN_"])  # the second near built-ins
def test_show_unknown_name_declared_in_a_typo_group(run, misgrouped, name):
    """`attn show` of a name declared in a misspelt group says where it is and points at doctor;
    it suggests no near name, since it has said where the name is."""
    misgrouped.dist("other-attn", "1.0", entry_points={"attn.backend": {"TRITON_ATTN_": "v:B"}})
    label = "vendor-attn 1.2" if name == "VENDOR_FAST" else "other-attn 1.0"
    result = run("show", name)
    assert result == Result(
        1,
        "",
        f"Error: unknown backend {name!r} in AttentionBackendEnum or MLAPrefillBackendEnum.\n"
        f"{name!r} = 'v:B' is declared by {label} in entry-point group 'attn.backend', which "
        "looks like a typo of 'attn.backends'; attn does not read that group.\n" + DOCTOR_HINT,
    )


@pytest.mark.parametrize("filler", range(0, 60, 3))
@pytest.mark.parametrize("space", [" ", ""])
def test_doctor_keeps_a_pasted_fix_on_one_line(run, conflict, monkeypatch, filler, space):
    """A line break in ``'x y,share-a'``, or after ``export``, changes what a pasted fix does."""
    value = f"x{'x' * filler}{space}y"
    monkeypatch.setenv("ATTN_PREFER", value)
    result = run("doctor")
    assert f"export ATTN_PREFER={shlex.quote(value + ',share-a')}" in result.out, result.out
    assert not re.search(r"\b(export|unset)\n", result.out), result.out
