"""Every example in the docs and the README runs, so the docs cannot drift from the code.

- The runnable programs in ``docs/examples/`` run to their final ``ok`` line.
- In each Markdown page (``docs/*.md`` and ``README.md``), every ``python`` block
  runs, in order, as one program in a fresh interpreter with warnings as
  errors; its asserts are the page's claims. A block may quote a file of the
  repository with a snippet line (``--8<-- "path"``), as the site does.
- Every ``$ attn ...`` line of a ``console`` block runs and exits 0 in its
  page's environment: the commands and options the docs show exist, and what
  they show (a listing, a clean doctor) is what a reader gets.
- Every ``toml`` block parses, and every ``json`` block is JSON.

A page that needs a plugin installed says so in an HTML comment, invisible on
the site: ``<!-- docs-test: install plugins_example/attn-template-plugin -->``.
A page whose python blocks are separate programs (each its own ``__main__``,
each followed by the ``output`` it prints) says
``<!-- docs-test: separate programs, run by tests/test_NAME.py -->``; that test
runs them, and they are not joined into one program here.
The plugin is installed (a real, non-editable install) into a folder put on
``PYTHONPATH`` of that page's programs and commands only.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.py"))
PAGES = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"])

_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w-]*)(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```",
    re.MULTILINE | re.DOTALL,
)
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
_SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"$', re.MULTILINE)
_INSTALL = re.compile(r"<!-- docs-test: install (?P<paths>[^>]+?) -->")
_SEPARATE = re.compile(r"<!-- docs-test: separate programs, run by (?P<test>tests/\S+\.py) -->")


def fenced(page: Path) -> list[tuple[str, str | None, str]]:
    """``(language, title, body)`` of every fenced block of *page*, snippet lines resolved."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        indent = len(match.group("indent"))
        body = "\n".join(line[indent:] for line in match.group("body").splitlines()) + "\n"
        body = _SNIPPET.sub(lambda m: (ROOT / m.group("path")).read_text(encoding="utf-8"), body)
        title = _TITLE.search(match.group("info"))
        found.append((match.group("lang"), title.group("title") if title else None, body))
    return found


def blocks(page: Path, lang: str) -> list[str]:
    """The bodies of *page*'s untitled blocks in *lang* (titled ones are files)."""
    return [body for language, title, body in fenced(page) if language == lang and title is None]


def commands(page: Path) -> list[tuple[dict[str, str], list[str]]]:
    """``(environment, arguments)`` of every ``attn`` command in *page*'s console blocks."""
    found = []
    for body in blocks(page, "console"):
        for line in body.splitlines():
            if not line.startswith("$ "):
                continue
            for part in line[2:].split("&&"):
                words = shlex.split(part, comments=True)
                env = {}
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                    name, _, value = words.pop(0).partition("=")
                    env[name] = value
                if words and words[0] == "attn":
                    found.append((env, words[1:]))
    return found


@pytest.fixture
def page_env(tmp_path, plugin_site):
    """The environment a page's examples run in: its plugins, no ATTN_* settings, no cache."""

    def page_env(page: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATTN_")}
        sites = [
            str(plugin_site(path))
            for match in _INSTALL.finditer(page.read_text(encoding="utf-8"))
            for path in match.group("paths").split()
        ]
        env["PYTHONPATH"] = os.pathsep.join(sites)
        # The console scripts the installs wrote (a host's own command), as in a virtualenv.
        env["PATH"] = os.pathsep.join([*(str(Path(s) / "bin") for s in sites), env["PATH"]])
        env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
        env["ATTN_NO_CACHE"] = "1"
        return env

    return page_env


def _pages(has) -> list:
    """The pages for which *has(page)* is true, as pytest parameters named by file."""
    return [pytest.param(page, id=page.name) for page in PAGES if has(page)]


def separate_programs(page: Path) -> str | None:
    """The test that runs *page*'s python blocks one by one, if the page names one."""
    found = _SEPARATE.search(page.read_text(encoding="utf-8"))
    return None if found is None else found.group("test")


PYTHON_PAGES = _pages(lambda page: blocks(page, "python") and separate_programs(page) is None)
COMMAND_PAGES = _pages(commands)
DATA_PAGES = _pages(lambda page: blocks(page, "toml") + blocks(page, "json"))
TEST_PAGES = _pages(
    lambda page: any(
        title is not None and Path(title).name.startswith("test_") for _, title, _ in fenced(page)
    )
)


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_clean(python, example):
    """Each example exits 0 with warnings as errors, and finishes with its 'ok' line."""
    done = python.run("-W", "error", str(example), check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "ok"


def test_examples_exist():
    """The docs ship at least the toy host."""
    assert "toy_host.py" in [p.name for p in EXAMPLES]


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks_run(page, page_env, tmp_path):
    """A page's python blocks, run in order as one program, exit 0 with warnings as errors."""
    code = blocks(page, "python")
    script = tmp_path / f"{page.stem}.py"
    script.write_text("\n\n".join(code), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=page_env(page),
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("page", COMMAND_PAGES)
def test_attn_commands_are_valid(page, page_env, tmp_path):
    """Every `$ attn ...` line of a page runs and exits 0, as the page shows it."""
    for env, args in commands(page):
        done = subprocess.run(
            [sys.executable, "-m", "attn", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,
            env={**page_env(page), **env},
        )
        assert done.returncode == 0, (args, done.returncode, done.stderr)


@pytest.mark.parametrize("page", DATA_PAGES)
def test_toml_and_json_blocks_parse(page):
    """Every toml block is TOML and every json block is JSON."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    for body in blocks(page, "toml"):
        tomllib.loads(body)
    for body in blocks(page, "json"):
        json.loads(body)


@pytest.mark.parametrize("strict", ["", "1"], ids=["default", "strict"])
@pytest.mark.parametrize("page", TEST_PAGES)
def test_page_files_pass_their_tests(page, strict, page_env, tmp_path):
    """Titled blocks are files (title="tests/test_x.py"); their tests pass, also as CI runs them.

    The docs tell plugin authors to run their tests under ATTN_STRICT=1, so the
    tests they show pass with and without it.
    """
    files = [(title, body) for _, title, body in fenced(page) if title is not None]
    for title, body in files:
        path = tmp_path / "project" / title
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path / "project",
        env={**page_env(page), "ATTN_STRICT": strict},
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_pages_of_separate_programs_name_an_existing_test():
    """A page left out of the one-program run names a test of the suite that runs it."""
    named = {page.name: separate_programs(page) for page in PAGES if separate_programs(page)}
    assert named == {"workers.md": "tests/test_docs_workers.py"}
    assert all((ROOT / test).is_file() for test in named.values())


def test_collector_sees_blocks_and_commands():
    """The collector finds the README's python block and attn commands, and the test pages."""
    readme = ROOT / "README.md"
    assert any("register_backend" in b for b in blocks(readme, "python"))
    assert ({}, ["list"]) in commands(readme)
    assert {p.values[0].name for p in TEST_PAGES} >= {"testing.md", "plugin-authors.md"}
