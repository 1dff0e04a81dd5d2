"""Every ``python`` block of docs/workers.md runs, and prints its ``output`` block.

The blocks run as scripts (``python -W error``) in a fresh interpreter, with the
plugin and the module the page assumes on ``PYTHONPATH``: ``attn-acme 1.0``
replacing ``FLASH_ATTN`` with ``acme_attn.FlashBackend``, and ``my_kernels``.
A block that imports ``ray`` is marked ``ray`` and skipped without it. It runs
with the interpreter the suite was started with (where ray is installed, not
the isolated runtime of the other tests), with ``ATTN_PLUGINS=attn-acme`` so
that no other plugin installed there takes part, and Ray's sessions in a
private folder (``RAY_TMPDIR``). Ray adds its own lines to
stdout, so there the ``output`` lines must appear in order.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "workers.md"
_BLOCK = re.compile(
    r"^```python\n(?P<code>.*?)^```\n(?:\n```output\n(?P<output>.*?)^```\n)?",
    re.DOTALL | re.MULTILINE,
)

ACME = '''\
from attn import AttentionBackend


class FlashBackend(AttentionBackend):
    """attn-acme's FLASH_ATTN."""
'''

MY_KERNELS = '''\
from attn import AttentionBackend, MLAPrefillBackend


class Attention(AttentionBackend):
    """An attention backend registered at runtime."""


class Prefill(MLAPrefillBackend):
    """An MLA prefill backend registered at runtime."""
'''


def _blocks():
    text = PAGE.read_text(encoding="utf-8")
    params = []
    for match in _BLOCK.finditer(text):
        heading = re.findall(r"^## (.+)$", text[: match.start()], re.MULTILINE)
        label = re.sub(r"\W+", "-", (heading[-1] if heading else "intro").lower()).strip("-")
        code = match.group("code")
        marks = []
        if re.search(r"^import ray$", code, re.MULTILINE):
            marks = [
                pytest.mark.ray,
                pytest.mark.skipif(
                    find_spec("ray") is None, reason="ray is not installed: pip install 'attn[ray]'"
                ),
            ]
        params.append(pytest.param(code, match.group("output"), id=label, marks=marks))
    return params


BLOCKS = _blocks()


@pytest.fixture(scope="module")
def for_ray():
    """The interpreter the suite was started with, and a private folder for Ray's sessions.

    Module fixtures are set up before the function-scoped isolation points
    ``sys.executable`` at the runtime virtualenv. The folder is short: Ray's
    socket paths under it must fit in 107 bytes.
    """
    folder = tempfile.mkdtemp(prefix="attn-ray-")
    yield {"python": sys.executable, "RAY_TMPDIR": folder}
    shutil.rmtree(folder, ignore_errors=True)


def test_the_page_has_its_examples():
    """The intro, multiprocessing, concurrent.futures, Ray and the mismatch: five blocks."""
    assert [p.id for p in BLOCKS] == [
        "intro",
        "multiprocessing",
        "concurrent-futures",
        "ray",
        "what-a-mismatch-looks-like",
    ]


def test_the_page_sets_up_what_its_examples_run_with():
    """The files the page asks a reader to write are the plugin and module used here."""
    text = PAGE.read_text(encoding="utf-8")
    pattern = r"^`([\w/.]+)`:\n\n```(?:toml|py)\n(.*?)^```\n"  # a file's name, then its text
    files = dict(re.findall(pattern, text, re.DOTALL | re.MULTILINE))
    assert files["acme/acme_attn.py"] == ACME
    assert files["my_kernels.py"] == MY_KERNELS
    project = files["acme/pyproject.toml"]  # tomllib is not in Python 3.10: the lines themselves
    assert '\n[project]\nname = "attn-acme"\nversion = "1.0"\n' in project
    group = '\n[project.entry-points."attn.backends"]\n'
    assert project.endswith(f'{group}FLASH_ATTN = "acme_attn:FlashBackend"\n')


@pytest.mark.parametrize(("code", "output"), BLOCKS)
def test_block_runs_and_prints_its_output(code, output, for_ray, sites, tmp_path):
    """The block exits 0 with warnings as errors and prints what the page shows."""
    site = sites.new()
    site.module("acme_attn", ACME)
    site.module("my_kernels", MY_KERNELS)
    site.dist(
        "attn-acme", "1.0", entry_points={"attn.backends": {"FLASH_ATTN": "acme_attn:FlashBackend"}}
    )
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
    env.update(
        PYTHONPATH=str(site.root),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        # Ray: loopback addresses only, no usage reports.
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
        RAY_USAGE_STATS_ENABLED="0",
    )
    python = sys.executable
    if "import ray" in code:
        python = for_ray["python"]
        env["ATTN_PLUGINS"] = "attn-acme"
        env["RAY_TMPDIR"] = for_ray["RAY_TMPDIR"]
        env["HOME"] = str(tmp_path / "home")  # Ray writes its cluster token under ~/.ray
    done = subprocess.run(
        [python, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    if output is None:
        assert done.stdout == ""
    elif "import ray" in code:
        lines = iter(done.stdout.splitlines())
        assert all(any(line == want for line in lines) for want in output.splitlines()), done.stdout
    else:
        assert done.stdout == output
