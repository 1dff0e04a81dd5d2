"""``attn state save FILE`` and ``attn doctor --against FILE``, run as the real command.

Each test runs ``python -m attn`` in a subprocess whose ``PYTHONPATH`` holds the
test's plugin site, so saving and checking happen in two processes, as on two
nodes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

import attn
from attn.cli import main

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

    def run(*args, env=None, stdin=None, max_file_size=None):
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
            preexec_fn=None if max_file_size is None else partial(limit_files, max_file_size),
        )

    return run


def limit_files(size: int) -> None:
    """Writing past *size* bytes fails (EFBIG; Python ignores SIGXFSZ), as on a full disk."""
    import resource  # noqa: PLC0415 - POSIX only

    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


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


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_save_that_cannot_be_written_whole_keeps_the_state_saved_before(attn_command, tmp_path):
    """The file is replaced, not rewritten in place: a failed write loses nothing."""
    assert attn_command("state", "save", "node.json").returncode == 0
    before = (tmp_path / "node.json").read_text(encoding="utf-8")
    assert len(before) > 4096
    done = attn_command("state", "save", "node.json", max_file_size=4096)
    assert (done.returncode, done.stderr.splitlines()[0]) == (
        2,
        "Error: cannot write node.json: File too large",
    )
    assert (tmp_path / "node.json").read_text(encoding="utf-8") == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("node")) == ["node.json"]


def test_save_in_a_folder_where_no_file_can_be_made_writes_the_file_in_place(
    tmp_path, monkeypatch, capsys
):
    """A writable file in a folder that is not: no file can be made beside it, so it is written
    to (this process runs as a user who may write anywhere: os.access says what such a folder
    would)."""
    target = tmp_path / "node.json"
    target.write_text("old", encoding="utf-8")
    inode, access = target.stat().st_ino, os.access

    def folder_not_writable(where, mode, **kwargs):
        return not (Path(where) == tmp_path and mode == os.W_OK) and access(where, mode, **kwargs)

    monkeypatch.setattr(os, "access", folder_not_writable)
    assert main(["state", "save", str(target)]) == 0, capsys.readouterr().err
    assert json.loads(target.read_text(encoding="utf-8"))["format"] == "attn-worker-state"
    assert target.stat().st_ino == inode
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("node")] == ["node.json"]
    monkeypatch.undo()
    assert main(["state", "save", str(target)]) == 0  # replaced: another file now
    assert target.stat().st_ino != inode


def test_save_through_a_symlink_replaces_the_file_it_names(attn_command, tmp_path):
    """A link to a shared state stays a link; the state it names is the one replaced."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "state.json").write_text("old", encoding="utf-8")
    (tmp_path / "node.json").symlink_to(tmp_path / "shared" / "state.json")
    assert attn_command("state", "save", "node.json").returncode == 0
    assert (tmp_path / "node.json").is_symlink()
    data = json.loads((tmp_path / "shared" / "state.json").read_text(encoding="utf-8"))
    assert data["format"] == "attn-worker-state"


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="no /dev/stdout")
def test_save_to_a_pipe_writes_to_it(attn_command):
    """/dev/stdout (a pipe here) is no file to replace: the state is written to it."""
    done = attn_command("state", "save", "/dev/stdout")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "attn-worker-state"


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
        "ATTN_PLUGINS is unset in the driver and 'attn-other' here\n"
        "To fix it, set the same ATTN_PLUGINS in every process, or install the same plugin "
        "versions on every node (here: pip install 'attn-acme==1.0').\n"
        "attn doctor: this environment differs from the state in node.json.\n"
    )


def test_doctor_against_stdin(attn_command):
    """FILE '-' reads the state from stdin."""
    saved = attn_command("state", "save", "-").stdout
    done = attn_command("doctor", "--against", "-", stdin=saved)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("like the state in -.\n")


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
