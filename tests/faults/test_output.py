"""attn's output: what plugins cannot do to it, and what happens when it cannot be written.

Plugins cannot pad the table or write into the JSON. Output that cannot be
written (a full disk, a closed stdout, an encoding without the characters)
is an ``Error:`` line and exit 1, tested with the real command in a subprocess.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from harness import cli

from attn.cli import main

GROUP = "attn.backends"
BACKEND = "from attn import AttentionBackend\n\n\nclass B(AttentionBackend):\n    pass\n"


def test_a_very_long_name_widens_only_its_own_row(site):
    """A 10,000-character backend name is printed whole, on its own line; other rows stay narrow."""
    long = "A" * 10_000
    site.module("long_mod", BACKEND)
    site.dist("long", entry_points={GROUP: {long: "long_mod:B"}})
    listing = cli("list", "attn.backends")
    assert listing.code == 0
    lines = listing.out.splitlines()
    assert long in lines
    assert max(len(line) for line in lines if line != long) <= 100


def test_plugin_prints_at_import_go_to_stderr(site):
    """attn list --load --json holds the JSON only; what the plugin printed is on stderr."""
    site.module("loud_mod", "print('hello from the plugin')\n" + BACKEND)
    site.dist("loud", entry_points={GROUP: {"LOUD": "loud_mod:B"}})
    loaded = cli("list", "--load", "--json")
    assert loaded.code == 0
    payload = json.loads(loaded.out)
    assert payload["registries"][0]["registry"] == "AttentionBackendEnum"
    assert "hello from the plugin" in loaded.err


# -- output that cannot be written: an `Error:` line and exit 1, never a traceback ---------


def attn(*args: str, stdout: object = subprocess.PIPE, env: dict[str, str] | None = None):
    """The real ``python -m attn ARGS``, seeing this test's ``sys.path``, *stdout* as given."""
    environ = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "attn", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        timeout=60,
        check=False,
    )


def attn_in_shell(args: str, redirection: str) -> subprocess.CompletedProcess[str]:
    """``python -m attn ARGS REDIRECTION`` run by ``/bin/sh`` (``>&-`` closes stdout)."""
    return subprocess.run(
        ["/bin/sh", "-c", f'"$0" -m attn {args} {redirection}', sys.executable],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("list", "--json"),
        ("list", "--load"),
        ("doctor",),
        ("doctor", "--json"),
        ("show", "FLASH_ATTN"),
        ("state", "save", "-"),
        ("--version",),
        ("--help",),
        ("list", "--help"),
        ("state", "save", "--help"),
    ],
)
def test_a_full_disk_is_an_error(args):
    """Output to /dev/full: `Error:` with the cause and exit 1."""
    with Path("/dev/full").open("w", encoding="utf-8") as full:
        done = attn(*args, stdout=full)
    assert (done.returncode, done.stderr) == (
        1,
        "Error: cannot write the output: No space left on device\n",
    )


@pytest.mark.parametrize(
    "args", ["list", "list --json", "doctor", "state save -", "show FLASH_ATTN", "--help"]
)
def test_a_closed_stdout_is_an_error(args):
    """`attn list >&-`: `Error:` saying stdout is closed, exit 1."""
    done = attn_in_shell(args, ">&-")
    assert (done.returncode, done.stderr) == (
        1,
        "Error: cannot write the output: stdout is closed\n",
    )


@pytest.mark.parametrize(
    "args", [("list",), ("list", "--json"), ("doctor",), ("state", "save", "-"), ("--help",)]
)
def test_a_closed_pipe_ends_the_command_quietly(args):
    """`attn list | head` once head has left: exit 1, nothing on stderr, no traceback."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = attn(*args, stdout=writer)
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (1, "")


@pytest.mark.parametrize("args", [("list",), ("list", "--json")])
def test_a_reader_that_leaves_mid_output_ends_the_command_quietly(site, args):
    """`attn list --json | head -c 10`, more than a pipe holds: exit 1, not 0 with output cut."""
    site.dist("big", entry_points={GROUP: {f"B{i}": f"big_mod:B{i}" for i in range(2000)}})
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "attn", *args]
    whole = subprocess.run(command, capture_output=True, env=environ, check=True).stdout
    assert len(whole) > 2 * 65536  # more than a pipe holds: the writer is still writing
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ
    ) as p:
        assert p.stdout is not None
        assert p.stdout.read(10)  # the reader has what it wanted, and leaves
        p.stdout.close()
        _, stderr = p.communicate(timeout=60)
    assert (p.returncode, stderr) == (1, b"")


def test_a_closed_stderr_changes_neither_the_output_nor_the_exit_code(site):
    """`attn list 2>&-` or `2>/dev/full`: the listing and exit 0; a plugin's prints are dropped."""
    loud = "import os\nprint('hello from the plugin')\nos.write(1, b'to fd 1\\n')\n"
    site.module("loud_mod", loud + BACKEND)
    site.dist("loud", entry_points={GROUP: {"LOUD": "loud_mod:B"}})

    def closed_stderr(args: str) -> subprocess.CompletedProcess[str]:
        return attn_in_shell(args, "2>&-")

    listed = closed_stderr("list")
    assert listed.returncode == 0
    assert "LOUD" in listed.stdout
    loaded = closed_stderr("list --load --json")
    assert loaded.returncode == 0
    assert json.loads(loaded.stdout)["registries"][0]["registry"] == "AttentionBackendEnum"
    for args in ("doctor --load --json", "select attn.backends --json --backend LOUD"):
        assert json.loads(closed_stderr(args).stdout)  # plugin code wrote to fd 1: not in stdout
    # A registry named on the command line is imported with its output dropped too.
    named = closed_stderr("list --json --registry loud_mod:B")
    assert (named.returncode, named.stdout) == (2, "")
    assert closed_stderr("show NO_SUCH_BACKEND").returncode == 1
    assert closed_stderr("list --no-such-option").returncode == 2
    # A stderr that refuses every write (a full disk) changes no exit code either.
    for args, code in (("list", 0), ("--version", 0), ("lsit", 2), ("list --load", 0)):
        assert attn_in_shell(args, "2>/dev/full").returncode == code, args


ASCII = {"PYTHONIOENCODING": "ascii", "LC_ALL": "C"}


@pytest.mark.parametrize("command", ["list", "show"])
def test_an_ascii_stdout_and_a_non_ascii_distribution_is_an_error(site, command):
    """A plugin named plügin on an ASCII stdout: `Error:` naming the character and the fix."""
    site.module("plug_mod", BACKEND)
    site.dist("plügin", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    done = attn(command, *(["PLUG"] if command == "show" else []), env=ASCII)
    assert done.returncode == 1
    assert done.stderr == (
        "Error: cannot write the output: stdout's encoding (ascii) cannot encode '\\xfc'; "
        "export PYTHONIOENCODING=utf-8\n"
    )


def test_an_ascii_stdout_and_a_non_ascii_backend_name_is_an_error(site):
    """A backend named PLÜG on an ASCII stdout: the same error; the JSON, all ASCII, is written."""
    site.module("plug_mod", BACKEND)
    site.dist("plug", entry_points={GROUP: {"PLÜG": "plug_mod:B"}})
    done = attn("list", "--load", env=ASCII)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: cannot write the output: stdout's encoding (ascii) ")
    as_json = attn("list", "--json", env=ASCII)
    assert as_json.returncode == 0, as_json.stderr
    assert "PLÜG" in json.dumps(json.loads(as_json.stdout), ensure_ascii=False)


def test_doctor_against_deeply_nested_json_is_a_usage_error(tmp_path):
    """100,000 nested arrays: not a saved state, exit 2 as for any file that is not JSON."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    done = attn("doctor", "--against", str(deep))
    assert done.returncode == 2
    assert done.stderr.startswith(f"Error: {deep} is not a saved attn state: not JSON (")
    assert done.stderr.endswith("\nTry 'attn doctor --help' for help.\n")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_doctor_against_an_endless_file_is_a_usage_error():
    """--against /dev/zero: reading stops at the bound of a saved state; exit 2, not a hang."""
    done = attn("doctor", "--against", "/dev/zero")
    assert done.returncode == 2
    assert done.stderr == (
        "Error: /dev/zero is not a saved attn state: longer than 67,108,864 characters\n"
        "Try 'attn doctor --help' for help.\n"
    )


def test_doctor_against_a_closed_stdin_is_a_usage_error():
    """`attn doctor --against - <&-`: exit 2 saying stdin is closed."""
    done = attn_in_shell("doctor --against -", "<&-")
    assert (done.returncode, done.stderr) == (
        2,
        "Error: cannot read stdin: stdin is closed\nTry 'attn doctor --help' for help.\n",
    )


# -- what installed metadata says cannot drive the terminal ------------------------------

#: A distribution name, a version and entry point names that hold terminal controls:
#: an ANSI colour, a title change ended by BEL, a clear screen, a bidirectional override.
CONTROLLED = {"name": "ev\x1b[31mil", "version": "1.0\x1b]0;pwned\x07"}
ENTRY_POINTS = {
    GROUP: {"SHARED": "ctl_mod:B", "BAD\x1b[2JNAME": "ctl_mod:B", "X\u202eY": "ctl_mod:B"}
}
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]")


@pytest.fixture
def controlled(site):
    """Two distributions claiming SHARED (a conflict warning), one with controls in its metadata."""
    site.module("ctl_mod", BACKEND)
    site.dist(
        CONTROLLED["name"],
        CONTROLLED["version"],
        entry_points=ENTRY_POINTS,
        folder="evil-1.0.dist-info",
    )
    site.dist("plain", entry_points={GROUP: {"SHARED": "ctl_mod:B"}})
    return site


@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("list", "--load"),
        ("doctor",),
        ("doctor", "--load"),
        ("show", "SHARED"),
        ("select", "attn.backends"),
    ],
)
def test_controls_in_metadata_are_printed_escaped(controlled, args):
    """No control character of the metadata reaches stdout or stderr; each is shown escaped."""
    done = cli(*args)
    assert RAW.search(done.out) is None, done.out
    assert RAW.search(done.err) is None, done.err
    shown = done.out + done.err
    assert "ev\\x1b[31mil" in shown
    if args[0] in {"list", "show"}:  # the conflict's warning names both distributions
        assert "Warning: " in done.err


def test_a_name_with_a_control_keeps_its_other_characters_in_the_table(site):
    """Only the control is escaped in the FROM column; the rest prints as written, as elsewhere."""
    site.module("ctl_mod", BACKEND)
    site.dist("alphä-\x1b[31mattn", entry_points={GROUP: {"ALPHA": "ctl_mod:B"}})
    row = next(line for line in cli("list", GROUP).out.splitlines() if line.startswith("ALPHA"))
    assert "alphä-\\x1b[31mattn" in row


def test_a_nul_in_metadata_is_escaped_in_doctor_as_in_the_table(site):
    """Doctor's wrapped findings keep a NUL a NUL (written \\x00), not a space."""
    site.module("nul_mod", BACKEND)
    entry_points = {GROUP: {"EVIL": "nul_mod:B"}}
    site.dist("ev\x00il-attn", entry_points=entry_points, requires=[], folder="evil-1.0.dist-info")
    out = cli("doctor").out
    assert "ev\\x00il-attn 1.0" in out
    assert "ev il-attn" not in out


def test_attn_colours_pass_and_metadata_controls_do_not(controlled, monkeypatch):
    """On a terminal attn's own colour codes are written; a title change from metadata is not."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    terminal = Terminal()
    with redirect_stdout(terminal), redirect_stderr(io.StringIO()):
        assert main(["list", "attn.backends"]) == 0
    text = terminal.getvalue()
    assert "\033[32mok\033[0m" in text
    terminal = Terminal()
    with redirect_stdout(terminal), redirect_stderr(io.StringIO()):
        assert main(["show", "SHARED"]) == 0
    assert "\033[32mused\033[0m" in terminal.getvalue()  # the claimant in effect
    assert "\033]0;pwned" not in text
    assert "\\x1b]0;pwned\\x07" in text


def test_a_stdout_without_isatty_gets_plain_text(monkeypatch):
    """A host's stdout with write() and flush() only: the listing, uncoloured, exit 0."""

    class Sink:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def write(self, text: str) -> int:
            self.parts.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    sink = Sink()
    monkeypatch.setattr(sys, "stdout", sink)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert main(["list", "attn.backends"]) == 0
    text = "".join(sink.parts)
    assert text.startswith("AttentionBackendEnum (entry-point group attn.backends)\n")
    assert "\033[" not in text
