"""``attn select``: the candidates in order with their verdicts, JSON, exit codes, usage errors."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
from pathlib import Path

import pytest

import attn.cli
from attn import AttentionBackendEnum, SelectionError, UnknownBackendError
from attn.cli import UsageError, _parser
from attn.cli import doctor as command

try:  # at collection, before each test's sys.path holds only attn and pytest
    import jsonschema
except ImportError:  # the test extra installs it
    jsonschema = None

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "docs" / "attn-select.schema.json"
TEMPLATE = ROOT / "plugins_example" / "attn-template-plugin" / "src" / "attn_template_plugin"


@pytest.fixture
def template(site):
    """The template plugin (plugins_example/attn-template-plugin) installed from its sources."""
    for path in sorted(TEMPLATE.glob("*.py")):
        site.module(f"attn_template_plugin.{path.stem}", path.read_text(encoding="utf-8"))
    value = "attn_template_plugin.backend:TemplateAttentionBackend"
    site.dist(
        "attn-template-plugin", "0.1.0", entry_points={"attn.backends": {"TEMPLATE_ATTN": value}}
    )
    return site


def attn_select(*argv: str) -> tuple[int, str, str]:
    """Run ``attn select ARGV`` as the attn command parses it; return (status, stdout, stderr)."""
    parser = _parser("select", "attn")
    parser.set_defaults(known=None, root="attn")  # as attn.cli.main sets them
    out, err = io.StringIO(), io.StringIO()
    status = command.run_select(parser.parse_args(["select", *argv]), out, err)
    return status, out.getvalue(), err.getvalue()


def test_the_template_plugin_is_chosen_on_the_cpu_without_torch(template):
    """CPU_ATTN needs torch, which is not installed here: the plugin-added CPU backend is next."""
    status, out, _ = attn_select("AttentionBackendEnum", "--set", "device=cpu")
    assert status == 0
    assert out == (
        "TEMPLATE_ATTN chosen for device='cpu':\n"
        "  CPU_ATTN (builtin): rejected: needs torch, not installed\n"
        "  TEMPLATE_ATTN (plugin attn-template-plugin 0.1.0): chosen\n"
    )


def test_no_valid_candidate_exits_1_with_every_reason():
    """Without the plugin nothing runs on this CPU: exit 1, every candidate and its reasons."""
    status, out, _ = attn_select("attn.backends", "--set", "device=cpu", "--set", "head_size=48")
    assert status == 1
    assert out == (
        "No attention backend of AttentionBackendEnum for device='cpu', head_size=48 is valid; "
        "tried in order:\n"
        "  CPU_ATTN (builtin): rejected: needs torch, not installed; head_size 48 not supported "
        "(32, 64, 80, 96, 112, 128, 160, 192, 224, 256)\n"
        "Install a kernel package named above, or change the settings.\n"
    )


def test_values_are_json_when_they_are_json():
    """head_size=128 is an int, capability=[9,0] a pair, device=cuda a string."""
    status, out, _ = attn_select(
        "AttentionBackendEnum", "--set", "capability=[9,0]", "--set", "head_size=128",
        "--set", "device=cuda", "--set", "use_mla=false",
    )  # fmt: skip
    assert status == 1
    first = out.splitlines()[0]
    assert "capability=(9, 0), device='cuda', head_size=128, use_mla=False" in first
    assert out.splitlines()[1].startswith("  FLASH_ATTN (builtin): rejected: needs flash-attn")


def test_the_hint_of_a_rejected_choice_selects_again_with_the_same_settings(tmp_path):
    """Its `attn select` line, run by a shell, passes every setting back as it was given."""
    settings = {
        "device": "c p u",  # a space
        "head_size": "128",  # text that reads as JSON
        "flag": True,
        "capability": (9, 0),
        "note": 'it\'s "quoted" $HOME',
        "dtype": None,
    }
    with pytest.raises(SelectionError) as caught:
        AttentionBackendEnum.select("FLASH_ATTN", **settings)
    hint = str(caught.value).splitlines()[-1]
    assert "--set 'capability=[9,0]' " in hint  # a glob to zsh, or bash with failglob: quoted
    line = hint.removeprefix("Choose another; list the candidates with: ")  # pasted as printed
    words = shlex.split(line)
    assert words[:2] == ["attn", "select"]
    strict = f"printf '%s\\0' {line}"  # bash as zsh is by default: a glob must match a file
    bash = ["bash", "-O", "failglob", "-c", strict]
    shell = subprocess.run(bash, check=False, cwd=tmp_path, capture_output=True)
    assert (shell.returncode, shell.stdout.decode().split("\0")[:-1]) == (0, words), shell.stderr
    status, out, _ = attn_select(*words[2:], "--backend", "FLASH_ATTN", "--json")
    assert status == 1
    assert json.loads(out)["settings"] == {**settings, "capability": [9, 0]}


def test_the_hint_of_a_choice_by_the_variable_lists_the_candidates_once_it_is_unset(monkeypatch):
    """With ATTN_ATTENTION_BACKEND set, the same command would only repeat the rejected choice."""
    monkeypatch.setenv("ATTN_ATTENTION_BACKEND", "FLASH_ATTN")
    status, out, _ = attn_select("AttentionBackendEnum", "--set", "head_size=64")
    hint = out.splitlines()[-1]
    then = "Choose another, or unset ATTN_ATTENTION_BACKEND; then list the candidates with: "
    assert hint.startswith(f"{then}attn select ")
    words = shlex.split(hint.removeprefix(then))
    assert attn_select(*words[2:]) == (status, out, "")  # still set: the same rejection
    monkeypatch.delenv("ATTN_ATTENTION_BACKEND")
    status, out, _ = attn_select(*words[2:])
    assert out.startswith("No attention backend of AttentionBackendEnum for head_size=64 is valid")
    assert len([line for line in out.splitlines() if line.startswith("  ")]) > 1


def test_an_explicit_backend_is_tried_alone(template):
    """--backend tries that name only: chosen, or exit 1 with its reasons."""
    status, out, _ = attn_select("AttentionBackendEnum", "--backend", "TEMPLATE_ATTN")
    assert (status, out.splitlines()[0]) == (
        0,
        "TEMPLATE_ATTN chosen explicitly for no settings:",
    )
    status, out, _ = attn_select(
        "AttentionBackendEnum", "--backend", "TEMPLATE_ATTN", "--set", "device=cuda"
    )
    assert status == 1
    assert "TEMPLATE_ATTN (plugin attn-template-plugin 0.1.0): rejected: runs on the CPU" in out
    with pytest.raises(UnknownBackendError, match="Did you mean 'TEMPLATE_ATTN'"):
        attn_select("AttentionBackendEnum", "--backend", "TEMPLATE_ATN")


@pytest.mark.parametrize("pair", ["head_size", "=3", "1x=2", "head-size=3"])
def test_bad_set_syntax_is_a_usage_error(pair):
    """A --set without KEY=VALUE, or whose KEY is not an identifier, is a usage error (exit 2)."""
    with pytest.raises(UsageError, match="--set expects KEY=VALUE") as caught:
        attn_select("AttentionBackendEnum", "--set", pair)
    assert caught.value.prog == "attn select"


@pytest.mark.parametrize("depth", [101, 1_000, 100_000])
def test_a_value_nested_too_deeply_is_a_usage_error(depth):
    """--set a=[[[...]]] beyond 100 levels: exit 2 naming the key, never a RecursionError."""
    value = "[" * depth + "]" * depth
    with pytest.raises(UsageError, match=r"^--set a: the value is JSON nested more than 100 deep$"):
        attn_select("AttentionBackendEnum", "--set", f"a={value}")


def test_a_value_nested_100_deep_is_tried():
    """100 levels of lists are a setting like any other (objects are parsed as deep)."""
    assert command.parse_settings(['a={"k": ' * 50 + "[" * 50 + "]" * 50 + "}" * 50], "s")["a"]
    status, out, _ = attn_select("AttentionBackendEnum", "--set", f"a={'[' * 100}{']' * 100}")
    assert status == 1
    assert out.startswith("No attention backend of AttentionBackendEnum for a=((((((")


def test_a_json_object_is_a_usage_error_naming_the_setting():
    """A setting must be hashable: an object is refused (exit 2), not turned into pairs."""
    with pytest.raises(UsageError, match=r"^--set setting 'opts' holds a dict: settings must be"):
        attn_select("AttentionBackendEnum", "--set", 'opts={"paged": true}')


def test_an_unknown_registry_is_a_usage_error():
    """REGISTRY is spelled exactly, as for attn list."""
    with pytest.raises(UsageError, match="unknown registry 'AttentionBackend'"):
        attn_select("AttentionBackend")


@pytest.mark.parametrize(
    ("pair", "value"),
    [
        ("device=cuda", "cuda"),
        ("use_mla=true", True),
        ("capability=[10, 0]", [10, 0]),
        ('name="quoted"', "quoted"),
        ("empty=", ""),
        ("kv_cache_dtype=fp8", "fp8"),
        ("head_size=NaN", "NaN"),
        ("head_size=Infinity", "Infinity"),
        ("head_size=-Infinity", "-Infinity"),
        ("scale=1e400", "1e400"),
        ("scale=-1e999", "-1e999"),
        ("scales=[1.5, 1e400]", "[1.5, 1e400]"),
        ("scale=1.5e3", 1500.0),
    ],
)
def test_parse_settings(pair, value):
    """JSON literals as JSON, anything else as the string written."""
    key = pair.partition("=")[0]
    assert command.parse_settings([pair], "attn select") == {key: value}


def test_nan_is_a_string_and_the_json_output_stays_json():
    """NaN is no JSON literal: the string 'NaN', and --json prints strict JSON."""
    _, out, _ = attn_select("AttentionBackendEnum", "--set", "head_size=NaN", "--json")

    def refuse(word):
        raise AssertionError(f"{word} in the output")

    assert json.loads(out, parse_constant=refuse)["settings"] == {"head_size": "NaN"}


def test_a_number_python_reads_as_infinite_is_a_string_and_the_json_output_stays_json():
    """1e400 is JSON, but Python reads it as inf: the string written, and --json stays JSON."""
    _, out, _ = attn_select("AttentionBackendEnum", "--set", "scale=1e400", "--json")

    def refuse(word):
        raise AssertionError(f"{word} in the output")

    assert json.loads(out, parse_constant=refuse)["settings"] == {"scale": "1e400"}


def test_set_backend_is_a_usage_error_pointing_at_the_backend_option():
    """--set backend=NAME would collide with the explicit choice: exit 2, naming --backend."""
    with pytest.raises(
        UsageError, match=r"^--set .backend=CPU_ATTN.: choose the backend with --backend"
    ):
        attn_select("AttentionBackendEnum", "--set", "backend=CPU_ATTN")


@pytest.mark.parametrize("registry", ["AttentionBackendEnum", "MLAPrefillBackendEnum"])
@pytest.mark.parametrize("key", ["registry", "cls"])
def test_any_other_setting_name_is_passed_through(registry, key):
    """Settings named like the parameters of attn's own functions reach the checks, no crash."""
    status, out, _ = attn_select(registry, "--set", f"{key}=x", "--set", "device=tpu")
    assert status == 1
    assert out.startswith("No ")
    assert f"{key}='x'" in out.splitlines()[0]


def validate(document):
    if jsonschema is None:
        pytest.skip("jsonschema is not installed")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema).check_schema(schema)
    jsonschema.validate(document, schema)


def test_json_output_follows_the_schema(template):
    """--json prints one object: settings, the choice and every row, as the schema says."""
    status, out, _ = attn_select(
        "AttentionBackendEnum", "--set", "device=cpu", "--set", "capability=[9,0]", "--json"
    )
    document = json.loads(out)
    validate(document)
    assert status == 0
    assert (document["registry"], document["chosen"], document["explicit"]) == (
        "AttentionBackendEnum",
        "TEMPLATE_ATTN",
        False,
    )
    assert document["settings"] == {"device": "cpu", "capability": [9, 0]}
    cpu, chosen = document["tried"]
    assert cpu["reasons"] == [
        {"code": "missing-requirement", "message": "needs torch, not installed"}
    ]
    assert (chosen["distribution"], chosen["distribution_version"], chosen["verdict"]) == (
        "attn-template-plugin",
        "0.1.0",
        "chosen",
    )
    assert chosen["path"] == "attn_template_plugin.backend.TemplateAttentionBackend"


def test_json_output_without_a_choice_follows_the_schema():
    """With nothing valid, the JSON still lists every row; chosen is null and the exit 1."""
    status, out, _ = attn_select("MLAPrefillBackendEnum", "--set", "device=tpu", "--json")
    document = json.loads(out)
    validate(document)
    assert (status, document["chosen"], document["tried"]) == (1, None, [])


def test_a_rejected_plugin_claiming_a_candidates_name_is_a_warning(site, capsys):
    """The row is the built-in's: the warning names the installed plugin and why it is out."""
    site.dist("vendor-cpu", "1.0", entry_points={"attn.backends": {"CPU_ATTN": "vendor_cpu:B"}},
              requires=("attn>=9",))  # fmt: skip
    assert attn.cli.main(["select", "AttentionBackendEnum", "--set", "device=cpu"]) == 1
    out, err = capsys.readouterr()
    assert "  CPU_ATTN (builtin): rejected: needs torch, not installed\n" in out
    assert err.startswith(
        "Warning: attention backend 'CPU_ATTN' from vendor-cpu 1.0 (entry point 'vendor_cpu:B') "
        "is incompatible: requires attn>=9, installed "
    )
    assert err.endswith("; the built-in CPU_ATTN stays in effect. Run 'attn doctor' for the fix.\n")
