"""``attn state save FILE`` and ``attn doctor --against FILE``, run as the real command.

Each test runs ``python -m attn`` in a subprocess whose ``PYTHONPATH`` holds the
test's plugin site, so saving and checking happen in two processes, as on two
nodes.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

import attn

ACME = {"attn.backends": {"FLASH_ATTN": "plug.mod:Backend", "ACME": "plug.mod:Other"}}
BACKENDS = len(attn.AttentionBackendEnum) + len(attn.MLAPrefillBackendEnum)


@pytest.fixture
def acme(plugin_module):
    """attn-acme 1.0 on a site that the commands see through PYTHONPATH."""
    plugin_module.dist("attn-acme", "1.0", entry_points=ACME)
    return plugin_module


@pytest.fixture
def attn_command(acme, tmp_path):
    """Run ``python -m attn ARGS`` with the site on PYTHONPATH and *env* on top."""

    def run(*args, env=None, stdin=None):
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
        environ.update(PYTHONPATH=str(acme.root), XDG_CACHE_HOME=str(tmp_path / "cache"))
        environ.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "attn", *args],
            capture_output=True,
            text=True,
            env=environ,
            cwd=tmp_path,
            input=stdin,
            timeout=60,
            check=False,
        )

    return run


def test_save_writes_the_state_as_json(attn_command, tmp_path):
    """The file holds the format, attn's version and both registries' resolved tables."""
    done = attn_command("state", "save", "node.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        f"Saved {BACKENDS + 1} backends of 2 registries to node.json; check another "
        "environment with 'attn doctor --against node.json'.\n"
    )
    data = json.loads((tmp_path / "node.json").read_text(encoding="utf-8"))
    assert data["format"] == "attn-worker-state"
    assert data["version"] == 1
    assert data["attn_version"] == attn.__version__
    assert [r["registry"] for r in data["registries"]] == [
        "AttentionBackendEnum",
        "MLAPrefillBackendEnum",
    ]
    rows = {b["name"]: b for b in data["registries"][0]["backends"]}
    assert rows["FLASH_ATTN"] == {
        "name": "FLASH_ATTN",
        "origin": "plugin",
        "path": "plug.mod:Backend",
        "distribution": "attn-acme",
        "version": "1.0",
    }


def test_the_hint_after_saving_can_be_pasted(attn_command, tmp_path):
    """A file name with a space is quoted in the command to run next, as a shell reads it."""
    done = attn_command("state", "save", "my node.json")
    assert done.stderr.endswith("environment with 'attn doctor --against 'my node.json''.\n")
    command = done.stderr.rsplit("environment with '", 1)[1][: -len("'.\n")]
    again = attn_command(*shlex.split(command)[1:])
    assert again.returncode == 0
    assert again.stdout.endswith("like the state in my node.json.\n")


def test_save_dash_writes_to_stdout(attn_command):
    """FILE '-' prints the JSON on stdout and nothing on stderr."""
    done = attn_command("state", "save", "-")
    assert done.returncode == 0
    assert done.stderr == ""
    assert json.loads(done.stdout)["format"] == "attn-worker-state"
    assert done.stdout.startswith('{\n  "attn_version": "')  # indented by 2, for reading and diffs


def test_doctor_against_the_same_environment_exits_0(attn_command):
    """A node like the one that saved the state: exit 0, one line saying so."""
    attn_command("state", "save", "node.json")
    done = attn_command("doctor", "--against", "node.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"attn doctor: this environment resolves all {BACKENDS + 1} backends of 2 "
        "registries like the state in node.json.\n"
    )


def test_doctor_against_a_differing_environment_exits_1_with_the_message(attn_command):
    """ATTN_PLUGINS leaves the plugin out here: exit 1 and apply_state's message."""
    attn_command("state", "save", "node.json")
    done = attn_command("doctor", "--against", "node.json", env={"ATTN_PLUGINS": "attn-other"})
    assert done.returncode == 1
    assert done.stdout == (
        "The backends in this process differ from the driver's:\n"
        "  AttentionBackendEnum.FLASH_ATTN\n"
        "    driver: plug.mod.Backend (plugin attn-acme 1.0)\n"
        "    worker: attn.backends.attention.FlashAttentionBackend (built-in)\n"
        "  AttentionBackendEnum.ACME\n"
        "    driver: plug.mod.Other (plugin attn-acme 1.0)\n"
        "    worker: absent\n"
        "ATTN_PLUGINS is unset in the driver and 'attn-other' here (to match: unset ATTN_PLUGINS)\n"
        "To fix it, set the same ATTN_PLUGINS in every process.\n"
        "attn doctor: this environment differs from the state in node.json.\n"
    )


def test_doctor_against_stdin(attn_command):
    """FILE '-' reads the state from stdin."""
    saved = attn_command("state", "save", "-").stdout
    done = attn_command("doctor", "--against", "-", stdin=saved)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("like the state in stdin.\n")


def test_doctor_against_a_state_with_runtime_registrations(attn_command, tmp_path):
    """A state captured in Python with registrations: doctor makes them too, then matches."""
    attn.register_backend(attn.AttentionBackendEnum.CUSTOM, "plug.mod:Other")
    path = tmp_path / "driver.json"
    # attn's registries only: this process also holds registries other test modules declare.
    state = attn.WorkerState([r for r in attn.capture_state().registries if r.host == "attn"])
    path.write_text(json.dumps(state.to_json()), encoding="utf-8")
    done = attn_command("doctor", "--against", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (
            ("doctor", "--against", "missing.json"),
            None,
            (
                "Error: cannot read missing.json: No such file or directory\n"
                "Try 'attn doctor --help' for help.\n"
            ),
        ),
        (
            ("doctor", "--against", "-"),
            "{not json",
            (
                "Error: stdin is not a saved attn state: not JSON (Expecting property name "
                "enclosed in double quotes: line 1 column 2 (char 1))\n"
                "Try 'attn doctor --help' for help.\n"
            ),
        ),
        (
            ("doctor", "--against", "-"),
            '{"format": "attn-list"}',
            (
                "Error: stdin is not a saved attn state: 'format' is 'attn-list', expected "
                "'attn-worker-state'; write it with 'attn state save FILE'\n"
                "Try 'attn doctor --help' for help.\n"
            ),
        ),
        (
            ("doctor", "--against", "-"),
            json.dumps(
                {
                    "format": "attn-worker-state",
                    "version": 1,
                    "registries": [
                        {
                            **dict.fromkeys(("registry", "qualname"), "AttentionBackendEnum"),
                            **dict.fromkeys(("module", "group"), "attn.backends"),
                            "host": "attn",
                            "env_prefix": "ATTN",
                            "fingerprint": "0" * 64,
                            "backends": [],
                            "runtime": [],
                            "cleared": [],
                            "selections": [],
                            "controls": dict.fromkeys(
                                (
                                    "ATTN_DISABLE_PLUGINS",
                                    "ATTN_PLUGINS",
                                    "ATTN_BLOCK_PLUGINS",
                                    "ATTN_PREFER",
                                )
                            ),
                        }
                    ],
                }
            ),
            (  # the state's own error, then how to write one: each said once
                "Error: stdin is not a saved attn state: registries[0].fingerprint does not "
                "match its backends (edited?); write it with 'attn state save FILE'\n"
                "Try 'attn doctor --help' for help.\n"
            ),
        ),
        (
            ("doctor", "--against", "x.json", "--json"),
            None,
            (
                "Error: --against compares with a saved state; it cannot be combined with "
                "--load or --json\nTry 'attn doctor --help' for help.\n"
            ),
        ),
        (
            ("state",),
            None,
            (
                "Error: the following arguments are required: ACTION\n"
                "Try 'attn state --help' for help.\n"
            ),
        ),
        (
            ("state", "save"),
            None,
            (
                "Error: the following arguments are required: FILE\n"
                "Try 'attn state save --help' for help.\n"
            ),
        ),
        (
            ("state", "save", "no/such/folder/x.json"),
            None,
            (
                "Error: cannot write no/such/folder/x.json: No such file or directory\n"
                "Try 'attn state save --help' for help.\n"
            ),
        ),
    ],
)
def test_usage_errors_exit_2(attn_command, args, stdin, message):
    """Bad files and bad arguments exit 2 with a message naming what is wrong."""
    done = attn_command(*args, stdin=stdin)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message)


HOST_MODULE = """\
from attn.registry import Backend, BackendEnum


class Kernel(Backend):
    pass


class KernEnum(BackendEnum, group="kernhost.kernels", host="kernhost", interface=Kernel):
    PLAIN = "kernhost_mod:Kernel"
"""


def test_doctor_against_a_hosts_state_names_the_registry_option(acme, attn_command):
    """A state of a host's registry, checked without --registry: the command that checks it."""
    acme.module("kernhost_mod", HOST_MODULE)
    saved = attn_command("state", "save", "node.json", "--registry", "kernhost_mod:KernEnum")
    assert saved.returncode == 0, saved.stderr
    done = attn_command("doctor", "--against", "node.json")
    assert done.returncode == 1
    assert (
        "    worker: absent: no module imported here declares it (a state never makes attn import "
        "one); import kernhost_mod before applying the state (with 'attn doctor --against FILE', "
        "add --registry kernhost_mod:KernEnum)\n"
    ) in done.stdout
    again = attn_command("doctor", "--against", "node.json", "--registry", "kernhost_mod:KernEnum")
    assert again.returncode == 0, again.stdout
