"""Every command over another host's registry: ``--registry MODULE:CLASS``, ``main(registries=)``.

The host, tinyinfer, is declared in this module (``test_hosts:SamplerEnum``, as
``--registry`` names it); its distribution and plugins are real metadata on
the test's site: tinyinfer-fast overrides GREEDY and adds FAST, tinyinfer-typo
declares its sampler in a misspelt group.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import attn
from attn.cli import main
from attn.registry import Backend, BackendEnum
from attn.registry.enum import state_of

try:  # at collection, before each test's sys.path holds only attn and pytest
    import jsonschema
except ImportError:  # the test extra installs it
    jsonschema = None

REGISTRY = f"{__name__}:SamplerEnum"
SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "attn-list.schema.json"
PROG = "tinyinfer plugins"


class Sampler(Backend):
    """What every tinyinfer sampler provides."""


class Greedy(Sampler):
    """The built-in greedy sampler."""


class TopK(Sampler):
    """The built-in top-k sampler."""


class SamplerEnum(
    BackendEnum, group="tinyinfer.samplers", host="tinyinfer", interface=Sampler, noun="sampler"
):
    GREEDY = f"{__name__}:Greedy"
    TOP_K = f"{__name__}:TopK"
    CUSTOM = None


NOT_A_REGISTRY = 3

PLUGIN = f"""
from {__name__} import Sampler


class FastGreedy(Sampler):
    pass


class Fast(Sampler):
    pass
"""


@pytest.fixture(autouse=True)
def _fresh_samplers():
    state_of(SamplerEnum).reset()
    yield
    state_of(SamplerEnum).reset()


@pytest.fixture
def tinyinfer(site):
    """tinyinfer 1.2.0 installed, with its plugins tinyinfer-fast and tinyinfer-typo."""
    site.dist("tinyinfer", "1.2.0", requires=())
    samplers = {"GREEDY": "tinyinfer_fast:FastGreedy", "FAST": "tinyinfer_fast:Fast"}
    site.dist(
        "tinyinfer-fast",
        "0.3",
        entry_points={"tinyinfer.samplers": samplers},
        requires=("tinyinfer>=1.0",),
    )
    site.module("tinyinfer_fast", PLUGIN)
    site.dist(
        "tinyinfer-typo",
        "0.1",
        entry_points={"tinyinfer.sampler": {"TYPO": "t:T"}},
        requires=("tinyinfer>=1.0",),
    )
    return site


@pytest.fixture
def run(capsys):
    """Run the command in-process; return (exit code, stdout, stderr)."""

    def run(*args: str, **kwargs: object) -> tuple[int, str, str]:
        code = main(list(args), **kwargs)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture
def host(run):
    """Run tinyinfer's own command: ``tinyinfer plugins ARGS``."""

    def host(*args: str) -> tuple[int, str, str]:
        return run(*args, registries=[SamplerEnum], prog=PROG)

    return host


def validate(document: dict) -> None:
    if jsonschema is None:
        pytest.skip("jsonschema is not installed")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema)(schema).validate(document)


# -- --registry MODULE:CLASS ----------------------------------------------------------


def test_list_over_a_hosts_registry(run, tinyinfer):
    """The host's table: built-ins, override, added name, misspelt group; hints name --registry."""
    code, out, err = run("list", "--registry", REGISTRY)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "SamplerEnum (entry-point group tinyinfer.samplers)",
        "NAME    ORIGIN   FROM                OVERRIDDEN  STATUS        AVAILABLE",
        "GREEDY  plugin   tinyinfer-fast 0.3  yes         ok            unknown",
        "TOP_K   builtin  tinyinfer           no          ok            yes",
        "CUSTOM  builtin  tinyinfer           no          unregistered  -",
        "FAST    plugin   tinyinfer-fast 0.3  no          ok            unknown",
        (
            "  CUSTOM: unregistered (no built-in default); 'attn show CUSTOM --registry "
            "test_hosts:SamplerEnum'"
        ),
        "    says how to register one.",
        "Not read (misspelt entry-point group, a typo of 'tinyinfer.samplers'):",
        "  TYPO = 't:T' from tinyinfer-typo 0.1, in group 'tinyinfer.sampler'",
        "  'attn doctor --registry test_hosts:SamplerEnum' says how to fix it.",
    ]


def test_list_json_over_a_hosts_registry_follows_the_schema(run, tinyinfer):
    """--json has the host's registry, rows and controls (its own prefix), as the schema says."""
    code, out, _ = run("list", "--json", "--registry", REGISTRY)
    document = json.loads(out)
    validate(document)
    (entry,) = document["registries"]
    assert (code, entry["registry"], entry["group"]) == (0, "SamplerEnum", "tinyinfer.samplers")
    assert [(b["name"], b["origin"]) for b in entry["backends"]] == [
        ("GREEDY", "plugin"),
        ("TOP_K", "builtin"),
        ("CUSTOM", "builtin"),
        ("FAST", "plugin"),
    ]
    assert sorted(document["controls"]) == [
        "TINYINFER_BLOCK_PLUGINS",
        "TINYINFER_DISABLE_PLUGINS",
        "TINYINFER_PLUGINS",
        "TINYINFER_PREFER",
        "TINYINFER_STRICT",
    ]


def test_registry_names_match_imported_registries_too(run, tinyinfer):
    """REGISTRY picks the imported registry by group or class name, beside attn's own."""
    code, out, _ = run("list", "tinyinfer.samplers", "SamplerEnum", "--registry", REGISTRY)
    assert (code, out.count("(entry-point group")) == (0, 1)
    code, out, _ = run("list", "AttentionBackendEnum", "--registry", REGISTRY)
    headings = [line for line in out.splitlines() if "(entry-point group" in line]
    assert headings == [
        "AttentionBackendEnum (entry-point group attn.backends)",
        "SamplerEnum (entry-point group tinyinfer.samplers)",
    ]


def test_show_over_a_hosts_registry(run, tinyinfer):
    """show NAME --registry MODULE:CLASS shows that registry only, with the override's claimant."""
    code, out, _ = run("show", "GREEDY", "--registry", REGISTRY)
    assert code == 0
    assert out.splitlines()[:5] == [
        "GREEDY in SamplerEnum (entry-point group tinyinfer.samplers)",
        "  path:          tinyinfer_fast.FastGreedy",
        "  origin:        plugin, from tinyinfer-fast 0.3",
        "  default:       test_hosts.Greedy (built-in)",
        "  overridden:    yes",
    ]
    assert "  - tinyinfer-fast 0.3: used" in out.splitlines()
    assert "AttentionBackendEnum" not in out
    kernel = "unknown: attn does not import a backend's code to describe it (--load does)"
    assert f"  kernel:        {kernel}" in out.splitlines()


def test_doctor_finds_a_typo_of_the_hosts_own_group(run, tinyinfer):
    """doctor --registry checks that registry: a misspelling of tinyinfer.samplers is a problem."""
    code, out, _ = run("doctor", "--registry", REGISTRY)
    assert code == 1
    assert out.startswith(
        "problem (typo-group, tinyinfer.samplers): tinyinfer-typo 0.1 declares 'TYPO' = 't:T' in "
        "group\n"
        "    'tinyinfer.sampler', which looks like a typo of 'tinyinfer.samplers'"
    )
    assert out.endswith("attn doctor: 1 problem (1 group, 2 plugin entry points).\n")


def test_doctor_load_imports_the_hosts_backends(run, tinyinfer):
    """--load imports the host's built-ins and plugins; the JSON counts its group only."""
    code, out, _ = run("doctor", "--registry", REGISTRY, "--load", "--json")
    document = json.loads(out)
    assert (code, document["groups"], document["problems"]) == (1, ["tinyinfer.samplers"], 1)
    assert [f["kind"] for f in document["findings"]] == ["typo-group"]


def test_select_over_a_hosts_registry(run, tinyinfer):
    """select --registry MODULE:CLASS needs no REGISTRY: the override of GREEDY is chosen."""
    code, out, _ = run("select", "--registry", REGISTRY, "--json")
    document = json.loads(out)
    assert (code, document["registry"], document["chosen"]) == (0, "SamplerEnum", "GREEDY")
    assert document["tried"][0]["distribution"] == "tinyinfer-fast"


def test_select_needs_one_registry(run):
    """Without REGISTRY, attn's two registries are one too many: a usage error naming both."""
    assert run("select") == (
        2,
        "",
        (
            "Error: select needs one registry; name one of: AttentionBackendEnum (attn.backends), "
            "MLAPrefillBackendEnum (attn.mla_prefill_backends)\n"
            "Try 'attn select --help' for help.\n"
        ),
    )


def test_select_names_another_hosts_registries_as_the_command_takes_them(run, tinyinfer):
    """With attn's registry and tinyinfer's, the usage error spells each as ``select`` takes it."""
    assert run("select", "--registry", "attn.backends", "--registry", REGISTRY)[1:] == (
        "",
        (
            "Error: select needs one registry; name one of: AttentionBackendEnum (attn.backends), "
            f"{REGISTRY} (tinyinfer.samplers)\n"
            "Try 'attn select --help' for help.\n"
        ),
    )
    assert run("select", REGISTRY, "--json")[0] == 0  # the hint, followed, selects


def test_state_save_and_doctor_against_a_hosts_registry(run, tinyinfer, tmp_path):
    """state save --registry saves that registry only; doctor --against with it agrees."""
    path = str(tmp_path / "node.json")
    code, _, err = run("state", "save", path, "--registry", REGISTRY)
    assert (code, err) == (
        0,
        (
            f"Saved 4 backends of 1 registry to {path}; check another environment with "
            f"'attn doctor --against {path} --registry {REGISTRY}'.\n"
        ),
    )
    saved = json.loads(Path(path).read_text(encoding="utf-8"))
    assert [r["registry"] for r in saved["registries"]] == ["SamplerEnum"]
    code, out, _ = run("doctor", "--against", path, "--registry", REGISTRY)
    assert (code, out) == (
        0,
        (
            f"attn doctor: this environment resolves all 4 backends of 1 registry like the state "
            f"in {path}.\n"
        ),
    )


def test_each_hosts_controls_are_its_own(run, tinyinfer, monkeypatch):
    """ATTN_DISABLE_PLUGINS leaves tinyinfer's plugins alone; TINYINFER_DISABLE_PLUGINS is its."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    _, out, _ = run("list", "--registry", REGISTRY, "--registry", "AttentionBackendEnum")
    assert out.count("Plugins are disabled") == 1
    assert "GREEDY  plugin" in out
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "0")
    monkeypatch.setenv("TINYINFER_DISABLE_PLUGINS", "1")
    SamplerEnum.refresh()  # the controls apply at discovery, once per process
    _, out, _ = run("list", "--registry", REGISTRY)
    assert "Plugins are disabled (TINYINFER_DISABLE_PLUGINS is set)" in out
    _, out, _ = run("doctor", "--registry", REGISTRY, "--registry", "AttentionBackendEnum")
    said = " ".join(out.split())  # wrapped
    assert "(TINYINFER_DISABLE_PLUGINS is set): no plugin in tinyinfer.samplers was checked" in said


# -- bad --registry values ------------------------------------------------------------

VALID = (
    "valid registries are: AttentionBackendEnum (attn.backends), "
    "MLAPrefillBackendEnum (attn.mla_prefill_backends), or another host's as MODULE:CLASS"
)
EXPECTED = "expected MODULE:CLASS, such as 'attn.backends:AttentionBackendEnum'"


#: A host module raising an exception whose str() raises SystemExit.
HOSTILE_STR = """\
class Mute(Exception):
    def __str__(self):
        raise SystemExit(4)


raise Mute
"""


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nope", f"unknown registry 'nope'; {VALID}"),
        ("mod:", f"invalid registry 'mod:': no class after ':'; {EXPECTED}"),
        (":Cls", f"invalid registry ':Cls': no module before ':'; {EXPECTED}"),
        (
            "a-b:Cls",
            f"invalid registry 'a-b:Cls': 'a-b' is not a dotted module name; {EXPECTED}",
        ),
        (
            "no_such_host:Cls",
            (
                "cannot import registry 'no_such_host:Cls': ModuleNotFoundError: "
                "No module named 'no_such_host'"
            ),
        ),
        (
            "raising_host:Cls",
            "cannot import registry 'raising_host:Cls': RuntimeError: tinyinfer needs a GPU",
        ),
        (
            "exiting_host:Cls",
            (
                "cannot import registry 'exiting_host:Cls': SystemExit: its code tried to exit "
                "the process (exit code 7)"
            ),
        ),
        (
            "mute_host:Cls",
            (
                "cannot import registry 'mute_host:Cls': Mute (its message cannot be shown: "
                "str() raised SystemExit)"
            ),
        ),
        ("closing_host:Cls", "cannot import registry 'closing_host:Cls': GeneratorExit"),
        (
            f"{__name__}:Missing",
            (
                f"cannot import registry '{__name__}:Missing': AttributeError: module "
                f"'{__name__}' has no attribute 'Missing'"
            ),
        ),
        (
            f"{__name__}:NOT_A_REGISTRY",
            (
                f"invalid registry '{__name__}:NOT_A_REGISTRY': it is 3, not a BackendEnum with a "
                "group"
            ),
        ),
        (
            "attn.registry:BackendEnum",
            (
                "invalid registry 'attn.registry:BackendEnum': it is <enum 'BackendEnum'>, not a "
                "BackendEnum with a group"
            ),
        ),
    ],
)
@pytest.mark.parametrize(
    "command",
    [["list"], ["show", "GREEDY"], ["doctor"], ["select"], ["state", "save", "-"]],
    ids=lambda c: c[0],
)
def test_a_bad_registry_is_a_usage_error(run, site, command, value, message):
    """Each command exits 2 naming the value and the cause, with no traceback."""
    site.module("raising_host", "raise RuntimeError('tinyinfer needs a GPU')\n")
    site.module("exiting_host", "raise SystemExit(7)\n")
    site.module("mute_host", HOSTILE_STR)
    site.module("closing_host", "raise GeneratorExit\n")
    hint = f"Try 'attn {' '.join(command[:2] if command[0] == 'state' else command[:1])} --help'"
    assert run(*command, "--registry", value) == (2, "", f"Error: {message}\n{hint} for help.\n")


def test_what_a_registry_module_prints_stays_out_of_json(run, site):
    """A host module printing at import: its text goes to stderr, the JSON parses."""
    site.module("loud_host", "print('loading the engine')\nfrom attn import AttentionBackendEnum\n")
    code, out, err = run("list", "--registry", "loud_host:AttentionBackendEnum", "--json")
    assert (code, err) == (0, "loading the engine\n")
    assert [r["registry"] for r in json.loads(out)["registries"]] == ["AttentionBackendEnum"]


# -- attn.cli.main(registries=..., prog=...) --------------------------------------------


def test_a_host_command_lists_its_registries_only(host, tinyinfer):
    """`tinyinfer plugins list` lists SamplerEnum, and its hints name the host's command."""
    code, out, _ = host("list")
    assert code == 0
    assert out.splitlines()[0] == "SamplerEnum (entry-point group tinyinfer.samplers)"
    assert "'tinyinfer plugins show CUSTOM' says how to register\n    one." in out
    assert "'tinyinfer plugins doctor' says how to fix it." in out
    assert "AttentionBackendEnum" not in out


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["--help"], "usage: tinyinfer plugins [-h] [--version] COMMAND ...\n"),
        (["show", "--help"], "usage: tinyinfer plugins show [-h] [--registry REGISTRY] [--load]"),
    ],
)
def test_a_host_commands_help_names_it(host, args, usage):
    """--help shows prog in the usage lines."""
    code, out, _ = host(*args)
    assert (code, out.startswith(usage)) == (0, True)


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["lsit"],
            (
                "unknown command 'lsit'; the commands are: list, show, doctor, select, "
                "state. Did you mean 'list'?"
            ),
            "tinyinfer plugins",
        ),
        (["list", "--bogus"], "unrecognized arguments: --bogus", "tinyinfer plugins list"),
        (
            ["list", "AttentionBackendEnum"],
            (
                "unknown registry 'AttentionBackendEnum'; valid registries are: SamplerEnum "
                "(tinyinfer.samplers), or another host's as MODULE:CLASS"
            ),
            "tinyinfer plugins list",
        ),
        (
            ["state", "save"],
            "the following arguments are required: FILE",
            "tinyinfer plugins state save",
        ),
    ],
)
def test_a_host_commands_usage_errors_name_it(host, args, message, hint):
    """Usage errors exit 2 with attn's message and a hint to the host command's help."""
    assert host(*args) == (2, "", f"Error: {message}\nTry '{hint} --help' for help.\n")


def test_a_host_commands_doctor_and_show(host, tinyinfer):
    """doctor and show speak of the host's command; select needs no REGISTRY."""
    code, out, _ = host("doctor")
    assert (code, out.splitlines()[-1]) == (
        1,
        "tinyinfer plugins doctor: 1 problem (1 group, 2 plugin entry points).",
    )
    assert "Run 'tinyinfer plugins doctor --load' to import every backend" in out
    code, _, err = host("show", "SLOW")
    assert (code, err.splitlines()[-1]) == (
        1,
        (
            "'tinyinfer plugins doctor' checks the installed plugins and says how to fix what it "
            "finds."
        ),
    )
    code, out, _ = host("select")
    assert (code, out.splitlines()[0]) == (0, "GREEDY chosen for no settings:")


@pytest.mark.parametrize("registries", [[attn.registry.BackendEnum], [], iter(()), "SamplerEnum"])
def test_main_refuses_what_is_not_a_registry(registries):
    """registries= takes registry classes only (one at least): else the host's bug, a TypeError."""
    with pytest.raises(TypeError, match=r"^main\(registries=\.\.\.\) expects registry classes"):
        main(["list"], registries=registries)
    if isinstance(registries, str):  # named as given, not as a list of letters
        with pytest.raises(TypeError, match=r"got 'SamplerEnum'$"):
            main(["list"], registries=registries)


def test_main_reads_registries_given_as_an_iterator_once(capsys):
    """A generator of registries is checked and then used: not consumed by the check."""
    from attn.backends import AttentionBackendEnum  # noqa: PLC0415

    assert main(["list", "--json"], registries=(r for r in [AttentionBackendEnum])) == 0
    names = [r["registry"] for r in json.loads(capsys.readouterr().out)["registries"]]
    assert names == ["AttentionBackendEnum"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["doctor", "--help"], "'tinyinfer plugins state save FILE'"),
        (["state", "--help"], "'tinyinfer plugins doctor --against FILE'"),
    ],
)
def test_a_host_commands_help_names_its_other_commands_by_it(host, args, said):
    """The help of doctor and state names the other command as the host's users run it."""
    code, out, _ = host(*args)
    assert (code, said in " ".join(out.split())) == (0, True)
    assert "'attn " not in out


def test_a_host_commands_state_hint_names_it(host, tmp_path):
    """A file that is no saved state: the hint to write one names the host's command."""
    state = tmp_path / "state.json"
    state.write_text("{}", encoding="utf-8")
    code, _, err = host("doctor", "--against", str(state))
    assert code == 2
    assert err.splitlines()[0].endswith("; write it with 'tinyinfer plugins state save FILE'")


def test_attns_hints_for_another_hosts_registry_name_it(run, tinyinfer, tmp_path):
    """attn show NAME --registry M:C: the hints it prints work on that registry, not attn's."""
    _, out, _ = run("doctor", "--registry", REGISTRY)
    assert f"Run 'attn doctor --load --registry {REGISTRY}' to import every backend" in out
    state = tmp_path / "state.json"
    _, _, err = run("state", "save", str(state), "--registry", REGISTRY)
    assert err.endswith(f"'attn doctor --against {state} --registry {REGISTRY}'.\n")
    code, out, _ = run("show", "FAST", "--registry", REGISTRY)
    assert code == 0
    assert f"'attn show FAST --load --registry {REGISTRY}' imports and checks it" in " ".join(
        out.split()
    )
    code, _, err = run("show", "SLOW", "--registry", REGISTRY)
    assert (code, err.splitlines()[-1]) == (
        1,
        (
            f"'attn doctor --registry {REGISTRY}' checks the installed plugins and says how to "
            "fix what it finds."
        ),
    )
    code, _, err = run("show", "FLASH_ATTN", "--registry", REGISTRY)  # attn's, not the host's
    assert (code, err.splitlines()[1]) == (
        1,
        (
            "'FLASH_ATTN' is a backend of AttentionBackendEnum, MLAPrefillBackendEnum: "
            "'attn show FLASH_ATTN' shows it."
        ),
    )


def test_strict_errors_name_the_command_that_ran(host, run, tinyinfer, monkeypatch):
    """TINYINFER_STRICT=1 beside a typo'd group: the fixes are the doctor of the command run."""
    monkeypatch.setenv("TINYINFER_STRICT", "1")
    code, out, err = host("list")
    assert (code, out) == (1, "")
    assert err.startswith("Error: TINYINFER_STRICT=1 and the sampler plugins in group ")
    assert err.endswith("Run 'tinyinfer plugins doctor' for the fixes.\n")
    for where in (["--registry", REGISTRY], [REGISTRY]):  # named either way, it is the one
        code, _, err = run("list", *where)
        assert (code, err.splitlines()[-1]) == (
            1,
            f"Run 'attn doctor --registry {REGISTRY}' for the fixes.",
        )
    code, _, err = run("select", REGISTRY)
    assert err.splitlines()[-1] == f"Run 'attn doctor --registry {REGISTRY}' for the fixes."
    code, _, err = run("list", "--registry", REGISTRY, prog="tinyinfer plugins")
    assert (
        err.splitlines()[-1]
        == f"Run 'tinyinfer plugins doctor --registry {REGISTRY}' for the fixes."
    )
    with pytest.raises(attn.AttnError) as raised:  # outside a command: attn's, with --registry
        SamplerEnum["GREEDY"]
    assert str(raised.value).endswith(f"Run 'attn doctor --registry {REGISTRY}' for the fixes.")
    assert raised.value.problems == (err.splitlines()[1][4:],)


def test_a_registry_without_members_lists_its_headings(run, site):
    """A host's enum with no member yet (plugins may add every name) is a table of none."""
    source = "from attn.registry import BackendEnum\n\n"
    source += "class E(BackendEnum, group='e.b', host='e'):\n    pass\n"
    site.module("empty_host", source)
    code, out, _ = run("list", "empty_host:E")
    assert (code, out.splitlines()[-1].split()) == (
        0,
        ["NAME", "ORIGIN", "FROM", "OVERRIDDEN", "STATUS", "AVAILABLE"],
    )


def test_what_the_hosts_module_prints_stays_out_of_json(run, site):
    """Importing MODULE is running its code: what it prints goes to stderr, --json stays JSON."""
    site.module("chatty_host", f"print('hello from the host')\nfrom {__name__} import *\n")
    code, out, err = run("list", "--json", "--registry", "chatty_host:SamplerEnum")
    assert (code, json.loads(out)["registries"][0]["registry"]) == (0, "SamplerEnum")
    assert "hello from the host" in err


def test_show_over_two_registries_hints_doctor_over_both(run, tinyinfer):
    """attn show NAME with two --registry: the doctor it names checks those two, not attn's."""
    code, _, err = run("show", "SLOW", "--registry", REGISTRY, "--registry", "attn.backends")
    assert (code, err.splitlines()[-1]) == (
        1,
        (
            f"'attn doctor --registry {REGISTRY} --registry attn.backends' checks the installed "
            "plugins and says how to fix what it finds."
        ),
    )


def test_a_class_name_two_known_registries_share_is_ambiguous(run, site):
    """Two registries of one class name: the name is refused, each MODULE:CLASS or group works."""
    declare = "class AttentionBackendEnum(BackendEnum, group='vhost.backends', host='vhost'):"
    site.module("vhost", f"from attn.registry import BackendEnum\n{declare}\n    V1 = 'vhost:B'\n")
    mine = ("--registry", "vhost:AttentionBackendEnum")
    message = (
        "Error: registry 'AttentionBackendEnum' is ambiguous; name "
        "attn.backends:AttentionBackendEnum or vhost:AttentionBackendEnum\n"
    )
    for command in (["list"], ["select"], ["show", "FLASH_ATTN", "--registry"]):
        code, out, err = run(*command, "AttentionBackendEnum", *mine)
        assert (code, out, err.splitlines(keepends=True)[0]) == (2, "", message)
    for attns in ("attn.backends", "attn.backends:AttentionBackendEnum"):
        code, out, _ = run("list", attns, *mine)
        headings = [line for line in out.splitlines() if "(entry-point group" in line]
        assert (code, len(headings)) == (0, 2)


def test_registry_arguments_may_follow_an_option(run):
    """``attn list A --load B``: argparse takes the first run of positionals only; attn all."""
    together = run("list", "attn.backends", "attn.mla_prefill_backends", "--json")
    assert run("list", "attn.backends", "--json", "attn.mla_prefill_backends") == together
    assert together[0] == 0
    assert run("select", "attn.backends", "--json", "attn.mla_prefill_backends")[0] == 2


def test_strict_mode_at_a_registry_modules_import_is_no_usage_error(run, tinyinfer, monkeypatch):
    """A host module looking a backend up at import, under TINYINFER_STRICT=1: exit 1, no hint."""
    monkeypatch.setenv("TINYINFER_STRICT", "1")
    tinyinfer.module("eager_host", f"from {__name__} import SamplerEnum\nSamplerEnum['GREEDY']\n")
    for command in (["list"], ["doctor"]):
        code, out, err = run(*command, "--registry", "eager_host:SamplerEnum")
        assert (code, out) == (1, "")
        assert err.startswith(
            "Error: cannot import registry 'eager_host:SamplerEnum': PluginProblemError: "
            "TINYINFER_STRICT=1 and the sampler plugins in group "
        )
        assert err.endswith(f"Run 'attn doctor --registry {REGISTRY}' for the fixes.\n")


def test_a_registry_its_module_declares_but_the_command_was_not_told_is_named(run, site):
    """Naming a sibling registry by group or class name: no near spelling, its MODULE:CLASS."""
    source = "from attn.registry import BackendEnum\n\n"
    source += "class Kernels(BackendEnum, group='twin.kernels', host='twin'):\n    pass\n\n"
    source += "class Prefill(BackendEnum, group='twin.prefill', host='twin'):\n    pass\n"
    site.module("twin_host", source)
    for name in ("twin.prefill", "Prefill"):
        code, out, err = run("list", "--registry", "twin_host:Kernels", name)
        assert (code, out) == (2, "")
        assert err.splitlines()[0].endswith("as MODULE:CLASS; name it as twin_host:Prefill")
