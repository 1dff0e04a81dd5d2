"""Every fix that ``attn doctor`` prints, applied as printed, leaves doctor with nothing to fix.

Each test builds the broken environment, runs doctor, takes the first
``fix:`` it prints, carries it out (:func:`apply`: delete a path, run in ``sh``
what it gives to change a variable, uninstall a distribution, rewrite the
metadata the way the fix says its entry points should be changed) and runs
doctor again, which must exit 0.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness import cli

GROUP = "attn.backends"
BACKEND = "from attn import AttentionBackend\n\n\nclass B(AttentionBackend):\n    pass\n"


def first_fix(*args: str) -> tuple[str, str]:
    """Doctor's first finding kind and its fix, on one line; doctor must have exited 1."""
    doctor = cli("doctor", *args)
    assert doctor.code == 1, doctor.out
    flat = " ".join(doctor.out.split())
    kind = re.search(r"problem \(([\w-]+)", flat)
    fix = re.search(r"fix: (.*?)(?= problem \(| note \(| attn doctor: | Not imported)", flat)
    assert kind is not None
    assert fix is not None, flat
    return kind.group(1), fix.group(1)


def dist_infos(name: str) -> list[Path]:
    stem = name.replace("-", "_")
    return [
        info
        for entry in sys.path
        if Path(entry).is_dir()
        for pattern in (f"{stem}-*.dist-info", f"{stem}-*.egg-info", f"{stem}.egg-info")
        for info in Path(entry).glob(pattern)
    ]


def rewrite(info: Path, old: str, new: str, file: str = "METADATA") -> None:
    text = (info / file).read_text(encoding="utf-8")
    (info / file).write_text(text.replace(old, new), encoding="utf-8")


_COMMAND = r"(?:(?:export )?ATTN_\w+=(?:'[^']*'|[^\s'])+|unset ATTN_\w+)"
"""What a fix gives to paste into a shell to change a variable."""


def apply(fix: str, monkeypatch: pytest.MonkeyPatch, reinstall=None) -> None:  # noqa: C901, PLR0912 - one branch per verb
    """Carry out *fix* as a user reads it (the first alternative it offers).

    *reinstall* writes a good copy of the distribution, as pip would.
    """
    if match := re.match(r"delete (/\S+?(?:(?:, | and )/\S+?)*)[,;]? ", fix + " "):
        for target in map(Path, re.split(", | and ", match.group(1))):
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        if re.search(r"\band reinstall \S+ \(pip install --force-reinstall", fix):
            assert reinstall is not None, fix
            reinstall()
    elif match := re.search(rf"{_COMMAND}(?: and {_COMMAND})*", fix):
        # What a shell does with the command as pasted ("ATTN_X=y" alone would export nothing).
        show = f"exec {sys.executable} -c 'import os; print(dict(os.environ))'"
        shell = f"{match.group(0).replace(' and ', '; ').rstrip(',;)')}; {show}"
        done = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, check=True)
        environ = ast.literal_eval(done.stdout)
        for name in {n for n in (*os.environ, *environ) if n.startswith("ATTN_")}:
            if name in environ:
                monkeypatch.setenv(name, environ[name])
            else:
                monkeypatch.delenv(name)
    elif match := re.match(r"use one of: (\S+)", fix):
        monkeypatch.setenv("ATTN_PLUGINS", match.group(1).rstrip(","))
    elif match := re.match(r"rename the group to '([\w.]+)' where (\S+) declares it", fix):
        for info in dist_infos(match.group(2)):
            text = (info / "entry_points.txt").read_text(encoding="utf-8")
            fixed = re.sub(r"^\[[^\]]+\]", f"[{match.group(1)}]", text, flags=re.MULTILINE)
            (info / "entry_points.txt").write_text(fixed, encoding="utf-8")
    elif match := re.match(r"add 'attn' with a version range to (\S+)'s dependencies", fix):
        for info in dist_infos(match.group(1)):
            with (info / "METADATA").open("a", encoding="utf-8") as handle:
                handle.write("Requires-Dist: attn>=0.1\n")
    elif match := re.match(r"install a release of (\S+) that supports attn (\S+) \(pip ", fix):
        for info in dist_infos(match.group(1)):
            text = (info / "METADATA").read_text(encoding="utf-8")
            text = re.sub(r"Requires-Dist: attn\S*", f"Requires-Dist: attn>={match.group(2)}", text)
            (info / "METADATA").write_text(text, encoding="utf-8")
    elif match := re.match(r"fix or uninstall (\S+?),", fix):
        for info in dist_infos(match.group(1)):
            shutil.rmtree(info)
    elif match := re.match(r"fix (\S+)'s entry point in group .* to (\w+) = \"(\S+)\" and", fix):
        for info in dist_infos(match.group(1)):  # as the fix says: the reinstall writes this
            line = f"{match.group(2)} = {match.group(3)}"
            text = (info / "entry_points.txt").read_text(encoding="utf-8")
            fixed = re.sub(r"^[^\[=\n]+=.*$", line, text, flags=re.MULTILINE)
            (info / "entry_points.txt").write_text(fixed, encoding="utf-8")
    else:
        pytest.fail(f"no rule applies this fix: {fix}")


def check(kind: str, monkeypatch: pytest.MonkeyPatch, *args: str, reinstall=None) -> None:
    found, fix = first_fix(*args)
    assert found == kind
    apply(fix, monkeypatch, reinstall)
    after = cli("doctor", *args)
    assert after.code == 0, f"after applying {fix!r}:\n{after.out}"


@pytest.mark.parametrize(
    ("entry_point", "line"),
    [
        ({"bad-name": "plug_mod:B"}, 'bad_name = "plug_mod:B"'),  # only what is invalid changes
        ({"PLUG": "plug_mod.B"}, 'PLUG = "plug_mod:B"'),
        ({"cpu_attn": "plug_mod.B"}, 'cpu_attn = "plug_mod:B"'),  # not CPU_ATTN, a built-in
        ({"bad-name": "plug_mod.B"}, 'bad_name = "plug_mod:B"'),  # both wrong: one fix
        ({"x\u00b2": "plug_mod:B"}, 'x_ = "plug_mod:B"'),  # ² is a word character, no identifier's
    ],
)
def test_invalid(site, monkeypatch, entry_point, line):
    site.module("plug_mod", BACKEND)
    site.dist("plug", entry_points={GROUP: entry_point})
    assert f"'attn.backends' to {line} and reinstall plug, " in first_fix()[1]
    check("invalid", monkeypatch)


def test_incompatible(site, monkeypatch):
    site.module("plug_mod", BACKEND)
    site.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}}, requires=["attn>=99"])
    check("incompatible", monkeypatch)


def test_shadowed(site, monkeypatch):
    site.module("plug_mod", BACKEND)
    site.dist("plug-a", entry_points={GROUP: {"X": "plug_mod:B"}})
    site.dist("plug-b", entry_points={GROUP: {"X": "plug_mod:B"}})
    check("shadowed", monkeypatch)


def test_undeclared_requirement(site, monkeypatch):
    site.module("plug_mod", BACKEND)
    site.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}}, requires=())
    check("undeclared-requirement", monkeypatch)


def test_typo_group(site, monkeypatch):
    site.module("plug_mod", BACKEND)
    site.dist("plug", entry_points={"attn.backend": {"PLUG": "plug_mod:B"}})
    check("typo-group", monkeypatch)


def test_empty_metadata(sites, monkeypatch):
    first, second = sites.new("a"), sites.new("b")
    first.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}}, metadata=False)
    second.module("plug_mod", BACKEND)
    second.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    check("empty-metadata", monkeypatch)


def test_duplicate_metadata(sites, monkeypatch):
    first, second = sites.new("a"), sites.new("b")
    first.module("plug_mod", BACKEND)
    first.dist("plug", "2.0", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    second.dist("plug", "1.0", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    check("duplicate-metadata", monkeypatch)


def test_unmatched_selection(site, monkeypatch):
    site.module("plug_mod", BACKEND)
    site.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    monkeypatch.setenv("ATTN_PLUGINS", "plug,nope")
    check("unmatched-selection", monkeypatch)


@pytest.mark.parametrize("prefer", ["nope", "plug,nope", "nope plug"])
def test_unmatched_preference(site, monkeypatch, prefer):
    site.module("plug_mod", BACKEND)
    site.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    monkeypatch.setenv("ATTN_PREFER", prefer)
    check("unmatched-selection", monkeypatch)


def test_three_copies(sites, monkeypatch):
    first, second, third = sites.new("a"), sites.new("b"), sites.new("c")
    first.module("plug_mod", BACKEND)
    for site, version in ((first, "3.0"), (second, "2.0"), (third, "1.0")):
        site.dist("plug", version, entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    check("duplicate-metadata", monkeypatch)


def test_a_build_leftover_before_the_installed_copy(sites, monkeypatch):
    """An egg-info that a build left in the checkout, first on sys.path, hides the copy pip
    installed (the one with a RECORD): the fix deletes the leftover, never pip's copy."""
    checkout, installed = sites.new("src"), sites.new("site-packages")
    installed.module("plug_mod", BACKEND)
    leftover = checkout.dist(
        "plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}}, folder="plug.egg-info"
    )
    pips = installed.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    (pips / "RECORD").write_text("plug_mod.py,,\n", encoding="utf-8")
    kind, fix = first_fix()
    assert kind == "duplicate-metadata"
    assert fix.startswith(f"delete {leftover} ({pips} is the copy pip installed)")
    check("duplicate-metadata", monkeypatch)
    assert pips.exists()
    assert not leftover.exists()


def test_unreadable_metadata(site, monkeypatch):
    site.module("plug_mod", BACKEND)
    info = site.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    (info / "entry_points.txt").write_bytes(b"\xff\xfe not text")

    def reinstall() -> None:
        site.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}})

    check("unreadable-metadata", monkeypatch, reinstall=reinstall)


def test_load_failure(site, monkeypatch):
    site.module("plug_mod", "raise RuntimeError('no GPU')\n")
    site.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    check("load-failure", monkeypatch, "--load")


def test_registered_by_plugin(site, monkeypatch):
    site.module(
        "plug_mod",
        BACKEND + "import attn\n"
        "attn.register_backend(attn.AttentionBackendEnum.TORCH_SDPA, 'plug_mod:B')\n",
    )
    site.dist("plug", entry_points={GROUP: {"PLUG": "plug_mod:B"}})
    check("registered-by-plugin", monkeypatch, "--load")
