"""``attn list``: what the command costs a process once the discovery cache is warm."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time

import pytest

import attn
from attn.cli import main
from racy import settle_attn_sources

#: Modules a warm ``attn list --json`` does without: the other commands, the
#: cold pipeline's matching machinery, and importlib.metadata with what it imports.
LIST_FORBIDDEN = (
    "attn.cli.doctor",
    "difflib",
    "packaging",
    "importlib.metadata",
    "email",
    "zipfile",
    "pathlib",
    # The result of each registry's merge is cached with it: no pipeline runs.
    "attn.registry.discovery",
    "attn.registry._findings",
)

LIST_SCRIPT = """
import os, sys
sys.path.insert(0, {site!r})
from attn.cli import main
out, sys.stdout = sys.stdout, open(os.devnull, "w", encoding="utf-8")
status = main(["list", "--json"])
sys.stdout = out
print(status, " ".join(m for m in {forbidden!r} if m in sys.modules))
"""


def test_warm_list_json_imports_only_what_listing_needs(site, runtime, tmp_path):
    """With the cache warm, ``attn list --json`` imports no other command and no pipeline."""
    # A requirement only packaging checks (a dev release), so the cold process imports it.
    site.dist(
        "attn-acme",
        entry_points={"attn.backends": {"FLASH_ATTN": "acme.m:B"}},
        requires=("attn>=0.1.dev0",),
    )
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    when = time.time() - 3600  # installed a while ago: the cache may trust the folders
    for path in (site.root, *site.root.rglob("*"), cwd, runtime.site):
        os.utime(path, (when, when))
    settle_attn_sources()
    code = LIST_SCRIPT.format(site=str(site.root), forbidden=LIST_FORBIDDEN)

    def imported() -> list[str]:
        # -I: no PYTHON* variables, no user site, no script folder: only what attn imports.
        done = subprocess.run(
            [sys.executable, "-I", "-c", code],
            cwd=cwd,
            env={"XDG_CACHE_HOME": str(tmp_path / "xdg"), "PATH": os.environ.get("PATH", "")},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout.split()

    cold = imported()  # the first process scans: the pipeline and packaging load
    assert cold[0] == "0"
    assert "packaging" in cold
    assert imported() == ["0"]


class _CountingStream(io.StringIO):
    """A stdout that counts write() calls: each is a system call when unbuffered."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


@pytest.mark.parametrize("command", [["list", "--json"], ["doctor", "--json"]])
def test_json_output_is_written_at_once(site, monkeypatch, command):
    """``--json`` writes its document in one call: unbuffered stdout makes one system call."""
    site.dist("attn-acme", entry_points={"attn.backends": {"FLASH_ATTN": "acme.m:B"}})
    stream = _CountingStream()
    monkeypatch.setattr(sys, "stdout", stream)
    assert main(command) == 0
    assert stream.writes == 1
    assert json.loads(stream.getvalue())["attn_version"] == attn.__version__


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _plain(monkeypatch: pytest.MonkeyPatch, stream: io.StringIO, command: list[str]) -> str:
    monkeypatch.setattr(sys, "stdout", stream)
    main(command)
    return re.sub(r"\033\[[0-9;]*m", "", stream.getvalue())


def test_colour_does_not_change_where_a_broken_reason_wraps(site, monkeypatch):
    """``list --load`` wraps a broken backend's reason as on a pipe: colour changes no layout."""
    message = "this backend module always fails when it is imported, as one whose library is gone"
    site.module("acme_broken", f"raise RuntimeError({message!r})\n")
    site.dist("attn-acme", entry_points={"attn.backends": {"ACME_ATTN": "acme_broken:B"}})
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    command = ["list", "--load", "attn.backends"]
    coloured = _plain(monkeypatch, _Terminal(), command)
    plain = _plain(monkeypatch, io.StringIO(), command)
    fix = "'attn doctor --load' says how to fix it"  # the break in the reason stays put
    assert f"when it is imported, as one\n    whose library is gone; {fix}\n" in plain  # 97 columns
    assert coloured == plain


def test_a_plugin_not_in_effect_is_wrapped_to_100_columns(site, monkeypatch, capsys):
    """The row of a plugin not in effect breaks after its quoted value, as the reasons do."""
    value = "acme_attention_kernels.backends.flash:AcmeFlashAttentionBackend"
    eps = {"attn.backends": {"ACME_FLASH_ATTN": value}}
    site.dist("acme-attention-kernels", "2.0", entry_points=eps, requires=("attn>=99",))
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert main(["list", "attn.backends"]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 100
    row = f"  ACME_FLASH_ATTN = '{value}' from\n      acme-attention-kernels 2.0: incompatible\n"
    assert f"{row}    requires attn>=99, installed {attn.__version__}\n" in out
