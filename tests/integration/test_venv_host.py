"""A host of its own, installed for real: tinyinfer (docs/examples/tinyinfer) and its plugins.

tinyinfer declares ``SamplerEnum`` (group ``tinyinfer.samplers``, built-ins
GREEDY and TOP_K) and ships ``tinyinfer plugins ...`` through
``attn.cli.main``; tinyinfer-fast replaces GREEDY and adds FAST; tinyinfer-typo
declares TYPO in the misspelt group ``tinyinfer.sampler``. Every command runs
both as ``attn ... --registry tinyinfer:SamplerEnum`` and as tinyinfer's own
console script, with and without attn's own ``ATTN_*`` switches set to values
that would change attn's registries: they change nothing for tinyinfer.
"""

from __future__ import annotations

import json
import shutil
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from venvtools import REPO_ROOT, build_wheels, check, project_of_installed, run

pytestmark = pytest.mark.integration

REGISTRY = "tinyinfer:SamplerEnum"

#: attn's own switches, each set to change attn's registries (or to be invalid).
ATTN_SWITCHES = {
    "ATTN_DISABLE_PLUGINS": "1",
    "ATTN_PLUGINS": "nothing-here",
    "ATTN_BLOCK_PLUGINS": "tinyinfer-fast",
    "ATTN_STRICT": "1",
    "ATTN_READER": "bogus",
    "ATTN_NO_CACHE": "bogus",
    "_ATTN_TESTING_SITES": "/nowhere",
}

LISTING = """\
SamplerEnum (entry-point group tinyinfer.samplers)
NAME    ORIGIN   FROM                  OVERRIDDEN  STATUS  AVAILABLE
GREEDY  plugin   tinyinfer-fast 0.3.0  yes         ok      unknown
TOP_K   builtin  tinyinfer             no          ok      yes
FAST    plugin   tinyinfer-fast 0.3.0  no          ok      unknown
Not read (misspelt entry-point group, a typo of 'tinyinfer.samplers'):
  TYPO = 'tinyinfer_typo:TypoSampler' from tinyinfer-typo 0.1.0, in group 'tinyinfer.sampler'
  '{doctor}' says how to fix it.
"""


@pytest.fixture
def tinyinfer(venv):
    """The venv with tinyinfer and both of its plugins installed from their wheels."""
    venv.install("tinyinfer", "tinyinfer-fast", "tinyinfer-typo")
    return venv


@pytest.fixture(
    params=["--registry", "--registry, ATTN_* set", "console script", "console script, ATTN_* set"]
)
def command(request, tinyinfer):
    """Run a command over tinyinfer's registry; return (its prog, run(args) -> result)."""
    env = ATTN_SWITCHES if request.param.endswith("set") else None
    if request.param.startswith("--registry"):
        return "attn", lambda *args: tinyinfer.attn(*args, "--registry", REGISTRY, env=env)
    script = tinyinfer.bin / "tinyinfer"
    return "tinyinfer plugins", lambda *args: tinyinfer.run(script, "plugins", *args, env=env)


def test_list(command):
    """The table: the override, the added name and the misspelt group, hints that work."""
    prog, run_command = command
    done = run_command("list")
    assert (done.returncode, done.stderr) == (0, "")
    doctor = f"{prog} doctor" + (f" --registry {REGISTRY}" if prog == "attn" else "")
    assert done.stdout == LISTING.format(doctor=doctor)


def test_list_json_follows_the_schema(command, tinyinfer):
    """--json validates against attn-list.schema.json and reports tinyinfer's controls only."""
    _, run_command = command
    done = check(run_command("list", "--json"))
    document = json.loads(done.stdout)
    tinyinfer.validate(document)
    (samplers,) = document["registries"]
    assert [(b["name"], b["origin"], b["distribution"]) for b in samplers["backends"]] == [
        ("GREEDY", "plugin", "tinyinfer-fast"),
        ("TOP_K", "builtin", None),
        ("FAST", "plugin", "tinyinfer-fast"),
    ]
    assert {p["name"]: p["status"] for p in samplers["plugins"]} == {
        "GREEDY": "used",
        "FAST": "used",
    }
    assert all(name.startswith("TINYINFER_") for name in document["controls"])


def test_show(command):
    """show GREEDY: the plugin's class, the built-in default, the claimant."""
    _, run_command = command
    done = check(run_command("show", "GREEDY"))
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        "GREEDY in SamplerEnum (entry-point group tinyinfer.samplers)",
        "  path:          tinyinfer_fast.FastGreedySampler",
        "  origin:        plugin, from tinyinfer-fast 0.3.0",
        "  default:       tinyinfer.GreedySampler (built-in)",
    ]
    assert "  - tinyinfer-fast 0.3.0: used" in lines


def test_doctor_finds_the_misspelt_group(command):
    """doctor: the typo of tinyinfer.samplers is the one problem, with --load too."""
    prog, run_command = command
    done = run_command("doctor")
    assert done.returncode == 1
    assert done.stdout.startswith("problem (typo-group, tinyinfer.samplers): tinyinfer-typo ")
    assert done.stdout.endswith(f"{prog} doctor: 1 problem (1 group, 2 plugin entry points).\n")
    done = run_command("doctor", "--load", "--json")
    document = json.loads(done.stdout)
    assert (done.returncode, document["groups"]) == (1, ["tinyinfer.samplers"])
    assert [f["kind"] for f in document["findings"]] == ["typo-group"]


def test_select(command):
    """select needs no REGISTRY: the plugin's GREEDY, first of tinyinfer's candidates, is chosen."""
    _, run_command = command
    done = check(run_command("select", "--json"))
    document = json.loads(done.stdout)
    assert (document["registry"], document["chosen"]) == ("SamplerEnum", "GREEDY")


def test_state_save_and_doctor_against(command, tmp_path):
    """The state of tinyinfer's registry, saved and checked in another process."""
    prog, run_command = command
    path = tmp_path / "node.json"
    done = check(run_command("state", "save", str(path)))
    again = f" --registry {REGISTRY}" if prog == "attn" else ""  # the same registry again
    assert done.stderr == (
        f"Saved 3 backends of 1 registry to {path}; check another environment with "
        f"'{prog} doctor --against {path}{again}'.\n"
    )
    registries = json.loads(path.read_text(encoding="utf-8"))["registries"]
    assert [(r["registry"], r["env_prefix"]) for r in registries] == [("SamplerEnum", "TINYINFER")]
    done = check(run_command("doctor", "--against", str(path)))
    assert done.stdout == (
        f"{prog} doctor: this environment resolves all 3 backends of 1 registry like the "
        f"state in {path}.\n"
    )


def test_a_usage_error_names_the_command(command):
    """A bad argument: exit 2 and a hint to the help of the command as the user typed it."""
    prog, run_command = command
    done = run_command("list", "--bogus")
    assert (done.returncode, done.stderr.splitlines()[-1]) == (
        2,
        f"Try '{prog} list --help' for help.",
    )


def test_tinyinfers_controls_are_its_own(tinyinfer):
    """TINYINFER_BLOCK_PLUGINS blocks tinyinfer-fast; attn's registries keep their plugins."""
    tinyinfer.install("attn-example-plugin")
    env = {"TINYINFER_BLOCK_PLUGINS": "tinyinfer-fast"}
    data = tinyinfer.list_json("--registry", REGISTRY, "AttentionBackendEnum", env=env)
    attention, samplers = data["registries"]
    assert {p["status"] for p in samplers["plugins"]} == {"disabled"}
    assert {p["status"] for p in attention["plugins"]} == {"used"}


def _run_time_closure(name: str) -> list[str]:
    """``name`` and every installed distribution it needs here, markers evaluated for this Python.

    On Python 3.10 that takes in pytest's exceptiongroup and tomli, which
    later Pythons do not need.
    """
    seen: dict[str, None] = {}
    todo = [name]
    while todo:
        current = canonicalize_name(todo.pop())
        if current in seen:
            continue
        seen[current] = None
        for line in metadata.requires(current) or ():
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(seen)


@pytest.fixture(scope="module")
def pytest_wheels(tmp_path_factory):
    """Wheels of pytest and what it requires, from the installed files: no index."""
    root = tmp_path_factory.mktemp("pytest-wheels")
    names = _run_time_closure("pytest")
    assert {"pytest", "pluggy", "iniconfig"} <= set(names)
    build_wheels([project_of_installed(name, root / "projects") for name in names], root)
    return root


def test_tinyinfers_own_suite_runs_under_any_attn_switches(tinyinfer, pytest_wheels, tmp_path):
    """tinyinfer's tests, with attn.testing under its prefix, pass whatever ATTN_* say."""
    tinyinfer.pip("install", "-q", "--no-index", "--find-links", pytest_wheels, "pytest")
    suite = tmp_path / "tinyinfer"
    example = REPO_ROOT / "docs" / "examples" / "tinyinfer"
    shutil.copytree(example / "tests", suite / "tests")
    shutil.copy(example / "pyproject.toml", suite)  # it enables attn.testing, as shipped
    argv = [tinyinfer.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    for env in ({}, ATTN_SWITCHES):
        done = run([*argv, "-W", "error", suite / "tests"], env=tinyinfer.env(env), timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[-1].startswith("4 passed")
