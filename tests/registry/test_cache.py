"""The discovery cache: one scan per process for a host's registries, and on disk."""

from __future__ import annotations

import importlib
import inspect
import json
import marshal
import os
import random
import shutil
import stat
import subprocess
import sys
import time
import warnings
import zlib
from pathlib import Path

import pytest
from test_report import LOAD_FAILURE, _result
from test_scan import ENVIRONMENTS

import attn
from attn.registry import _cache, discovery
from attn.registry.codes import Code
from attn.registry.enum import state_of
from attn.registry.report import plain, result_from
from racy import settle_attn_sources

GROUP = "attn.backends"
PREFILL = "attn.mla_prefill_backends"


@pytest.fixture
def scans(monkeypatch):
    """Count the scans of installed metadata."""
    monkeypatch.setenv("ATTN_NO_CACHE", "1")  # every discovery scans: none reads the file
    calls: list[int] = []
    real = discovery.scan

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(discovery, "scan", counting)
    return calls


def test_sibling_registries_share_one_scan(site, scans):
    """The first discovery of each of attn's two registries scans sys.path once in all."""
    site.dist("both", entry_points={GROUP: {"A": "both.m:A"}, PREFILL: {"P": "both.m:P"}})
    assert attn.AttentionBackendEnum["A"].get_path() == "both.m.A"
    assert attn.MLAPrefillBackendEnum["P"].get_path() == "both.m.P"
    assert len(scans) == 1


def test_refresh_scans_again_for_the_sibling_too(site, scans):
    """refresh() scans again, and a sibling discovered later uses that newer scan."""
    state_of(attn.AttentionBackendEnum).ensure()
    site.dist("late", entry_points={PREFILL: {"LATE": "late.m:P"}})
    attn.AttentionBackendEnum.refresh()
    assert attn.MLAPrefillBackendEnum["LATE"].get_path() == "late.m.P"
    assert len(scans) == 2


def test_disabled_plugins_read_no_metadata(site, scans, monkeypatch):
    """Under ATTN_DISABLE_PLUGINS no distribution is read: lookups give the built-ins."""
    site.dist("plug", entry_points={GROUP: {"FLASH_ATTN": "plug.m:B"}})
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    assert attn.AttentionBackendEnum.FLASH_ATTN.get_path().startswith("attn.backends.")
    assert scans == []


def test_realpath_only_for_names_found_twice(sites, monkeypatch):
    """De-duplication resolves symlinks only for distributions that have a second copy."""
    first, second = sites.new("first"), sites.new("second")
    first.dist("once", entry_points={GROUP: {"ONCE": "once.m:A"}})
    first.dist("twice", "2.0", entry_points={GROUP: {"TWICE": "twice.m:A"}})
    second.dist("twice", "1.0", entry_points={GROUP: {"TWICE": "twice.m:A"}})
    resolved: list[str] = []

    def counting(path):
        resolved.append(Path(path).name)
        return os.path.realpath(path)

    monkeypatch.setattr(discovery, "realpath", counting)
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)  # no virtualenv: its folder unread
    state_of(attn.AttentionBackendEnum).ensure()
    assert sorted(resolved) == ["twice-1.0.dist-info", "twice-2.0.dist-info"]


# -- the cache on disk ---------------------------------------------------------

SCRIPT = """
import json, sys, time, warnings
START = time.time_ns()  # a scan the process read from the file began before it started
warnings.simplefilter("always")
import attn
from attn.registry import _cache
from attn.registry.enum import state_of
out = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        for registry in (attn.AttentionBackendEnum, attn.MLAPrefillBackendEnum):
            state = state_of(registry)
            state.ready()
            out[registry.__name__] = {
                name: [e.path.colon, e.distribution, e.version]
                for name, e in state._layers.table.items()
            }
    except attn.AttnError as exc:
        out["error"] = [type(exc).__name__, str(exc)]
out["warnings"] = [[w.category.__name__, str(w.message)] for w in caught]
held = _cache._SHARED.get("attn")
out["from_file"] = held is not None and held[1].started < START
out["discovery_imported"] = "attn.registry.discovery" in sys.modules
print(json.dumps(out))
"""

#: SCRIPT, with a refresh() of each registry after its first discovery.
REFRESHED = SCRIPT.replace(
    "            state.ready()\n", "            state.ready()\n            registry.refresh()\n"
)


def age(*paths: Path, seconds: float = 3600) -> None:
    """Make *paths* (and everything under them) look modified *seconds* ago.

    Also wait, if attn's own modules were edited within the racy tick (right
    after an edit or a checkout), until they are older: else no scan is trusted.
    """
    when = time.time() - seconds
    for path in paths:
        for item in [path, *path.rglob("*")]:
            os.utime(item, (when, when), follow_symlinks=False)
    settle_attn_sources()


class Env:
    """Fresh processes sharing one cache folder, with test sites on PYTHONPATH."""

    def __init__(self, tmp_path: Path, runtime_site: Path) -> None:
        self.root = tmp_path
        self.runtime_site = runtime_site
        self.cache = tmp_path / "xdg"
        self.cwd = tmp_path / "cwd"
        self.cwd.mkdir()
        self.site = tmp_path / "site"
        self.site.mkdir()
        self.extra: dict[str, str] = {}

    def dist(self, name, version="1.0", entry_points=None, requires=("attn>=0.1",)):
        info = self.site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        lines = [f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
        (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
        eps = entry_points or {GROUP: {"FLASH_ATTN": f"{name.replace('-', '_')}.m:B"}}
        text = "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in names.items())
            for group, names in eps.items()
        )
        (info / "entry_points.txt").write_text(text, encoding="utf-8")
        return info

    def age(self):
        age(self.site, self.cwd)
        # The suite's own site-packages, made when the session began: old enough.
        when = time.time() - 3600
        os.utime(self.runtime_site, (when, when))

    def environ(self, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "_ATTN_"))}
        env.update(PYTHONPATH=str(self.site), XDG_CACHE_HOME=str(self.cache))
        env.update(self.extra)
        env.update(extra)
        return env

    def run(self, code=SCRIPT, **extra):
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=self.cwd,
            env=self.environ(**extra),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return json.loads(done.stdout)

    def files(self):
        folder = self.cache / "attn"
        return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.fixture
def env(tmp_path, runtime):
    return Env(tmp_path, runtime.site)


def flash(out):
    return out["AttentionBackendEnum"].get("FLASH_ATTN")


def test_second_process_uses_the_cache_and_imports_no_pipeline(env):
    """A process after an unchanged one reads the cache file, not sys.path, and gets the same."""
    env.dist("plug")
    env.age()
    first, second = env.run(), env.run()
    assert (first["from_file"], second["from_file"]) == (False, True)
    assert second["discovery_imported"] is False
    assert flash(second) == ["plug.m:B", "plug", "1.0"]
    assert first == {**second, "from_file": False, "discovery_imported": True}


def test_cache_folder_and_file_are_private(env):
    """The folder is created with mode 0700 and the file is readable by its owner only."""
    env.dist("plug")
    env.age()
    env.run()
    folder = env.cache / "attn"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    (name,) = env.files()
    assert name.startswith("attn-")
    assert name.endswith(".marshal")
    assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600


def install(env):
    env.dist("newcomer", entry_points={GROUP: {"NEW": "newcomer.m:N"}})


def uninstall(env):
    shutil.rmtree(env.site / "plug-1.0.dist-info")


def upgrade(env):
    shutil.rmtree(env.site / "plug-1.0.dist-info")
    env.dist("plug", "2.0", entry_points={GROUP: {"FLASH_ATTN": "plug.v2:B"}})


def downgrade(env):
    shutil.rmtree(env.site / "plug-1.0.dist-info")
    env.dist("plug", "0.9", entry_points={GROUP: {"FLASH_ATTN": "plug.old:B"}})


def reinstall_other_entry_points(env):
    shutil.rmtree(env.site / "plug-1.0.dist-info")
    env.dist("plug", entry_points={GROUP: {"OTHER": "plug.m:O"}, PREFILL: {"P": "plug.m:P"}})


EXPECTED = {
    install: (
        {"FLASH_ATTN": ["plug.m:B", "plug", "1.0"], "NEW": ["newcomer.m:N", "newcomer", "1.0"]},
        {},
    ),
    uninstall: ({}, {}),
    upgrade: ({"FLASH_ATTN": ["plug.v2:B", "plug", "2.0"]}, {}),
    downgrade: ({"FLASH_ATTN": ["plug.old:B", "plug", "0.9"]}, {}),
    reinstall_other_entry_points: (
        {"OTHER": ["plug.m:O", "plug", "1.0"]},
        {"P": ["plug.m:P", "plug", "1.0"]},
    ),
}


@pytest.mark.parametrize("aged", [True, False], ids=["cached", "within-racy-tick"])
@pytest.mark.parametrize("change", list(EXPECTED), ids=lambda f: f.__name__)
def test_the_next_process_sees_what_an_installer_did(env, change, aged):
    """Install, uninstall, upgrade, downgrade and reinstall are seen by the next process."""
    env.dist("plug")
    if aged:
        env.age()
    first = env.run()
    assert env.run()["from_file"] is aged
    change(env)
    after = env.run()
    assert after["from_file"] is False
    backends, prefill = EXPECTED[change]
    assert (after["AttentionBackendEnum"], after["MLAPrefillBackendEnum"]) == (backends, prefill)
    assert after != first
    env.age()
    env.run()
    assert env.run() == {**after, "from_file": True, "discovery_imported": False}


def editable(env, version, source):
    """Install a hatchling-style editable: a dist-info and a .pth naming the source folder."""
    src = env.root / source
    src.mkdir(exist_ok=True)
    for old in env.site.glob("edit-*.dist-info"):
        shutil.rmtree(old)
    info = env.dist("edit", version, entry_points={GROUP: {"EDIT": f"{source}.m:E"}})
    (info / "direct_url.json").write_text('{"dir_info": {"editable": true}}', encoding="utf-8")
    (env.site / "_edit.pth").write_text(f"{src}\n", encoding="utf-8")
    return src


def test_the_next_process_sees_an_editable_reinstall(env):
    """Reinstalling an editable project (new version, entry points, source folder) is seen."""
    env.extra["PYTHONSTARTUP"] = ""
    src = editable(env, "0.1.dev0", "first_src")
    age(src)
    env.age()
    env.run()
    assert env.run()["from_file"] is True
    editable(env, "0.2.dev0", "second_src")
    after = env.run()
    assert after["from_file"] is False
    assert after["AttentionBackendEnum"] == {"EDIT": ["second_src.m:E", "edit", "0.2.dev0"]}


def setuptools_editable(env, version, backend):
    """``pip install -e .`` of a setuptools src layout, as it writes one, again and again.

    pip replaces the dist-info in site-packages (with a PEP 610 ``direct_url.json``
    naming the project); setuptools rewrites ``src/edit.egg-info`` in place, and
    ``src/`` is on ``sys.path``.
    """
    project = env.root / "project"
    src = project / "src"
    for old in env.site.glob("edit-*.dist-info"):
        shutil.rmtree(old)
    info = env.dist("edit", version, entry_points={GROUP: {backend: "edit.m:E"}})
    url = {"url": project.as_uri(), "dir_info": {"editable": True}}
    (info / "direct_url.json").write_text(json.dumps(url), encoding="utf-8")
    egg = src / "edit.egg-info"
    egg.mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("PKG-INFO", f"Metadata-Version: 2.1\nName: edit\nVersion: {version}\n"),
        ("requires.txt", "attn>=0.1\n"),
        ("entry_points.txt", f"[{GROUP}]\n{backend} = edit.m:E\n"),
    ):
        with (egg / name).open("w", encoding="utf-8") as handle:  # in place, as setuptools does
            handle.write(text)
    env.extra["PYTHONPATH"] = os.pathsep.join((str(env.site), str(src)))
    return project


def test_the_next_process_sees_a_setuptools_editable_reinstall(env):
    """A new version with other entry points, its egg-info rewritten in place, is seen."""
    project = setuptools_editable(env, "0.1", "FIRST")
    age(project)
    env.age()
    env.run()
    before = env.run()
    assert before["from_file"] is True
    assert before["AttentionBackendEnum"]["FIRST"] == ["edit.m:E", "edit", "0.1"]
    assert before["warnings"] == []  # the egg-info is the same install, not a second copy
    setuptools_editable(env, "0.2", "SECOND")
    after = env.run()
    assert after["from_file"] is False
    assert "FIRST" not in after["AttentionBackendEnum"]
    assert after["AttentionBackendEnum"]["SECOND"] == ["edit.m:E", "edit", "0.2"]
    assert after["warnings"] == []


def test_an_egg_info_rewritten_in_place_alone_is_seen(env):
    """``setup.py egg_info`` in an editable project rewrites its entry points: seen."""
    project = setuptools_editable(env, "0.1", "FIRST")
    age(project)
    env.age()
    env.run()
    assert env.run()["from_file"] is True
    egg = project / "src" / "edit.egg-info" / "entry_points.txt"
    with egg.open("w", encoding="utf-8") as handle:
        handle.write(f"[{GROUP}]\nFIRST = edit.other:E\n")
    after = env.run()
    assert after["from_file"] is False
    assert after["AttentionBackendEnum"]["FIRST"] == ["edit.m:E", "edit", "0.1"]


def develop_egg_info(env):
    """A develop install's egg-info (PKG-INFO, requires.txt, one entry point) on sys.path, aged."""
    src = env.root / "develop"
    egg = src / "dev.egg-info"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Name: dev\nVersion: 1.0\n", encoding="utf-8")
    (egg / "requires.txt").write_text("attn>=0.1\n", encoding="utf-8")
    (egg / "entry_points.txt").write_text(f"[{GROUP}]\nDEV = dev.m:B\n", encoding="utf-8")
    env.extra["PYTHONPATH"] = os.pathsep.join((str(env.site), str(src)))
    age(src)
    env.age()
    return egg


def test_a_requires_txt_rewritten_in_place_is_seen(env):
    """A develop install's egg-info: its requires.txt edited in place is seen next time."""
    egg = develop_egg_info(env)
    env.run()
    before = env.run()
    assert (before["from_file"], before["AttentionBackendEnum"]) == (
        True,
        {"DEV": ["dev.m:B", "dev", "1.0"]},
    )
    with (egg / "requires.txt").open("w", encoding="utf-8") as handle:
        handle.write("attn>=99\n")
    after = env.run()
    assert (after["from_file"], after["AttentionBackendEnum"]) == (False, {})


def test_a_requires_txt_created_later_is_seen(env):
    """A metadata file that was missing when the file was written, created since: seen.

    The cache stamps only the files that exist; creating one changes its folder's stamp
    (its ctime too, even with the folder's dates set back as an archive tool does).
    """
    egg = develop_egg_info(env)
    (egg / "requires.txt").unlink()
    age(egg.parent)
    env.run()
    assert env.run()["AttentionBackendEnum"] == {"DEV": ["dev.m:B", "dev", "1.0"]}
    assert env.run()["from_file"] is True
    before = egg.stat()
    (egg / "requires.txt").write_text("attn>=99\n", encoding="utf-8")
    os.utime(egg, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = env.run()
    assert (after["from_file"], after["AttentionBackendEnum"]) == (False, {})


def test_an_egg_info_pkg_info_edited_in_place_is_seen(env):
    """A develop install's PKG-INFO, edited in place with its stamps set back: seen."""
    egg = develop_egg_info(env)
    env.run()
    assert env.run()["from_file"] is True
    rewrite_in_place(egg / "PKG-INFO", "Version: 1.0", "Version: 1.1")
    after = env.run()
    assert (after["from_file"], after["AttentionBackendEnum"]) == (
        False,
        {"DEV": ["dev.m:B", "dev", "1.1"]},
    )


def rewrite_in_place(path: Path, old: str, new: str) -> None:
    """Change a file without changing its size, inode or modification time."""
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    assert len(old) == len(new)
    with path.open("r+", encoding="utf-8") as handle:
        handle.write(text.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_scan_within_the_racy_tick_is_not_trusted(env):
    """A folder modified just before a scan may change unseen: the next process scans again."""
    info = env.dist("plug")
    env.run()  # the site was written a moment ago: within the racy window
    rewrite_in_place(info / "entry_points.txt", "plug.m:B", "plug.x:B")
    after = env.run()
    assert after["from_file"] is False
    assert flash(after) == ["plug.x:B", "plug", "1.0"]


#: Run before SCRIPT: the first call of *HOOK* lets attn read, then makes CHANGE (a deploy).
DURING_THE_SCAN = """
import os
from attn.registry import _scan
original = _scan.{hook}
def hooked(*args):
    found = original(*args)
    if any("{where}" in str(a) for a in args) and not hooked.done:  # the path, whatever its place
        hooked.done = True
        {change}
    return found
hooked.done = False
_scan.{hook} = hooked
"""


#: Run first: this process's file system keeps whole seconds (ext3; ext4 with small inodes).
COARSE_CLOCK = """
import os, types
from attn.registry import _cache
class Coarse:
    def __init__(self, st):
        self.st = st
    def __getattr__(self, name):
        value = getattr(self.st, name)
        return value // 10**9 * 10**9 if name in ("st_mtime_ns", "st_ctime_ns") else value
stat = lambda *args, **kwargs: Coarse(os.stat(*args, **kwargs))
_cache.os = types.SimpleNamespace(**{**vars(os), "stat": stat})
"""


@pytest.mark.parametrize("clock", ["", COARSE_CLOCK], ids=["nanoseconds", "whole-seconds"])
def test_an_edit_with_its_time_set_back_while_a_scan_reads_is_not_trusted(env, clock):
    """cp -p or rsync -a rewrites entry_points.txt after attn read it: its new ctime tells.

    A ctime of whole seconds lags the scan's clock by up to a second: still racy.
    """
    info = env.dist("plug")
    env.age()
    edit = f"rewrite_in_place(Path({str(info / 'entry_points.txt')!r}), 'plug.m:B', 'plug.x:B')"
    code = DURING_THE_SCAN.format(hook="local_entry_points", where="plug-1.0", change=edit)
    helper = "import os\nfrom pathlib import Path\n" + inspect.getsource(rewrite_in_place)
    if clock:  # the scan begins 0.1 s into a second, the edit follows in the same second
        time.sleep(1.1 - time.time() % 1)
    during = env.run(clock + helper + code + SCRIPT)
    assert flash(during) == ["plug.m:B", "plug", "1.0"]  # what it read before the edit
    later = env.run(clock + SCRIPT)
    assert (later["from_file"], flash(later)) == (False, ["plug.x:B", "plug", "1.0"])


def test_a_sys_path_folder_switched_while_a_scan_reads_it_is_not_trusted(env, tmp_path):
    """A symlink on sys.path moved to another release, older than the scan, during the scan."""
    releases = tmp_path / "releases"
    for number, value in (("1", "plug.one:B"), ("2", "plug.two:B")):
        env.site = releases / f"r{number}"
        env.site.mkdir(parents=True)
        env.dist("plug", entry_points={GROUP: {"FLASH_ATTN": value}})
    env.site = tmp_path / "current"
    env.site.symlink_to(releases / "r1")
    age(releases, env.cwd)
    new = tmp_path / "next"  # not in the working folder, which is on sys.path too
    r2, new, current = (str(p) for p in (releases / "r2", new, env.site))
    switch = f"os.symlink({r2!r}, {new!r}); os.replace({new!r}, {current!r})"
    code = DURING_THE_SCAN.format(hook="fast_entry", where=str(env.site), change=switch)
    during = env.run(code + SCRIPT)
    assert flash(during) == ["plug.one:B", "plug", "1.0"]
    later = env.run()
    assert (later["from_file"], flash(later)) == (False, ["plug.two:B", "plug", "1.0"])
    assert env.run()["from_file"] is True  # the scan after the switch is trusted


def test_a_scan_long_after_the_last_change_is_trusted(env):
    """The counterpart: once files are old, the next process reads the file."""
    env.dist("plug")
    env.age()
    env.run()
    assert env.run()["from_file"] is True


@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        ("entry_points.txt", "plug.m:B", "plug.x:B", ["plug.x:B", "plug", "1.0"]),
        ("METADATA", "Version: 1.0", "Version: 1.1", ["plug.m:B", "plug", "1.1"]),
    ],
)
def test_an_edit_in_place_with_its_stamps_set_back_is_seen(env, file, old, new, expected):
    """A plugin's file edited in place, mtime, size and inode set back: its ctime tells."""
    info = env.dist("plug")
    env.age()
    env.run()
    assert env.run()["from_file"] is True
    rewrite_in_place(info / file, old, new)
    after = env.run()
    assert (after["from_file"], flash(after)) == (False, expected)
    assert env.run() == {**after, "from_file": True, "discovery_imported": False}


def test_an_entry_point_file_rewritten_by_an_installer_is_seen(env):
    """A plugin's entry_points.txt rewritten in place (new mtime) is seen; its folder is not."""
    info = env.dist("plug")
    env.age()
    env.run()
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nFLASH_ATTN = plug.new:B\n", "utf-8")
    assert flash(env.run()) == ["plug.new:B", "plug", "1.0"]


def test_two_processes_writing_at_once_leave_one_good_file(env):
    """Processes that write the cache at the same time leave one valid file and no temporaries."""
    env.dist("plug")
    env.age()
    running = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT],
            cwd=env.cwd,
            env=env.environ(),
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [json.loads(p.communicate(timeout=60)[0]) for p in running]
    assert all(flash(out) == ["plug.m:B", "plug", "1.0"] for out in outputs)
    assert len(env.files()) == 1
    assert env.files()[0].endswith(".marshal")
    assert env.run()["from_file"] is True


def corrupt(file: Path) -> None:
    file.write_bytes(random.Random(20261201).randbytes(200))  # noqa: S311 - reproducible junk


def truncate(file: Path) -> None:
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])


def foreign(file: Path) -> None:
    file.write_bytes(marshal.dumps(("another", "format", 99)))


def empty(file: Path) -> None:
    file.write_bytes(b"")


def group_writable(file: Path) -> None:
    file.chmod(0o664)


def one_byte_changed(file: Path) -> None:
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 1  # what a failing disk or an edit that keeps the shape does
    file.write_bytes(bytes(data))


def code_object(file: Path) -> None:
    file.write_bytes(marshal.dumps(compile("raise SystemExit(3)", "x", "exec")))


def a_folder(file: Path) -> None:
    file.unlink()
    file.mkdir()


def checksummed(fields: tuple[object, ...]) -> bytes:
    """*fields* as attn writes a cache file: marshal's bytes after their CRC-32."""
    data = marshal.dumps(fields)
    return zlib.crc32(data).to_bytes(4, "big") + data


def _reshaped(file: Path, index: int, value: object) -> None:
    """Field *index* of the cached tuple replaced, with a checksum that matches (by hand)."""
    fields = list(marshal.loads(file.read_bytes()[4:]))  # noqa: S302 - what attn wrote
    fields[index] = value
    file.write_bytes(checksummed(tuple(fields)))


def start_as_text(file: Path) -> None:
    _reshaped(file, 2, "yesterday")


def stamps_of_another_shape(file: Path) -> None:
    _reshaped(file, 3, (("/", (1,)), ("/", 2)))


def outcomes_as_a_list(file: Path) -> None:
    _reshaped(file, 5, [1, 2])


def a_fifo(file: Path) -> None:
    """A named pipe: opening it to read would wait for a writer forever."""
    file.unlink()
    os.mkfifo(file, 0o600)


@pytest.mark.parametrize(
    "damage",
    [
        corrupt,
        truncate,
        one_byte_changed,
        foreign,
        empty,
        group_writable,
        code_object,
        a_folder,
        a_fifo,
        start_as_text,
        stamps_of_another_shape,
        outcomes_as_a_list,
    ],
    ids=lambda f: f.__name__,
)
def test_a_damaged_or_untrusted_file_is_ignored_and_rebuilt(env, damage):
    """Corrupt, truncated, foreign, empty, group-writable files are not trusted; attn rescans.

    So is a file whose checksum matches but whose fields have another shape."""
    env.dist("plug")
    env.age()
    expected = env.run()
    (name,) = env.files()
    damage(env.cache / "attn" / name)
    after = env.run()
    assert after == expected
    if damage is not a_folder:
        assert env.run()["from_file"] is True  # rebuilt


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS bounds allocations on Linux")
def test_a_file_whose_sizes_ask_for_more_memory_than_there_is_is_ignored(env):
    """A tuple of 2**31 items (a damaged length) is a MemoryError where memory is short."""
    env.dist("plug")
    env.age()
    expected = env.run()
    (name,) = env.files()
    (env.cache / "attn" / name).write_bytes(b"(" + (2**31 - 1).to_bytes(4, "little") + b"\xe9")
    limited = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (2**32, 2**32))\n"
    assert env.run(limited + SCRIPT) == expected


def test_a_cache_folder_that_cannot_be_made_is_not_an_error(env):
    """With XDG_CACHE_HOME pointing at a file, attn works, uncached and silently."""
    env.dist("plug")
    env.age()
    blocker = env.root / "blocker"
    blocker.write_text("", encoding="utf-8")
    first = env.run(XDG_CACHE_HOME=str(blocker))
    second = env.run(XDG_CACHE_HOME=str(blocker))
    assert flash(first) == flash(second) == ["plug.m:B", "plug", "1.0"]
    assert (first["warnings"], second["from_file"]) == ([], False)


def test_the_importlib_metadata_backport_keeps_the_cache_on(env, backport):
    """Its path finder (added on import; dask imports it on 3.10 and 3.11) reads the same folders.

    It reads them by its own release's rules: a process without it, or with another release
    of it, does not take the answer from that file.
    """
    env.dist("plug")
    copy = env.root / "backport"
    shutil.copytree(backport, copy)  # the files, not links: edited below
    env.age()
    age(copy)
    env.extra["PYTHONPATH"] = os.pathsep.join((str(env.site), str(copy)))
    code = "import importlib_metadata\n" + SCRIPT
    first, second = env.run(code), env.run(code)
    assert (first["from_file"], second["from_file"]) == (False, True)
    assert flash(second) == ["plug.m:B", "plug", "1.0"]
    assert first == {**second, "from_file": False, "discovery_imported": True}
    assert env.run(code, ATTN_READER="reference", ATTN_NO_CACHE="1") == first
    assert env.run()["from_file"] is False  # without the backport: the standard rules' file
    code_file = copy / "importlib_metadata" / "__init__.py"
    rewrite_in_place(code_file, "import ", "import\t")  # an upgrade in place, its folder unchanged
    assert env.run(code)["from_file"] is False


def test_no_cache_turns_reading_and_writing_off(env):
    """ATTN_NO_CACHE=1 writes nothing, and ignores a file that is there."""
    env.dist("plug")
    env.age()
    env.run(ATTN_NO_CACHE="1")
    assert env.files() == []
    env.run()
    assert env.run(ATTN_NO_CACHE="yes")["from_file"] is False


def test_no_cache_set_during_the_process_writes_nothing_more(env):
    """Variables are read at each discovery: the second registry's writes no file."""
    env.dist("plug")
    env.age()
    code = f"""if True:
        import os, shutil, attn
        attn.AttentionBackendEnum["FLASH_ATTN"]
        os.environ["ATTN_NO_CACHE"] = "1"
        shutil.rmtree({str(env.cache / "attn")!r})
        attn.MLAPrefillBackendEnum["FLASH_ATTN"]
        print(1)
    """
    env.run(code)
    assert env.files() == []


#: A process on a platform without POSIX ownership (no os.geteuid, as on Windows).
WITHOUT_OWNERSHIP = """
import os, sys
del os.geteuid
import attn
from attn.cli import main
assert attn.AttentionBackendEnum["FLASH_ATTN"].get_path() == "plug.m.B"
assert attn.MLAPrefillBackendEnum["CPU"].get_path().startswith("attn.backends.")
sys.exit(main(["list"]))
"""


def test_without_posix_ownership_the_cache_is_off_and_the_rest_works(env):
    """Without os.geteuid, lookups and ``attn list`` work, and no cache file is written."""
    env.dist("plug")
    env.age()
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", WITHOUT_OWNERSHIP],
            check=False,
            cwd=env.cwd,
            env=env.environ(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (done.returncode, done.stderr) == (0, "")
        assert "FLASH_ATTN               plugin   plug 1.0" in done.stdout
    assert env.files() == []


def test_controls_apply_on_top_of_the_cached_scan(env):
    """Changing ATTN_PLUGINS needs no rescan: the cached records serve the new selection."""
    env.dist("plug")
    env.dist("other", entry_points={GROUP: {"OTHER": "other.m:O"}})
    env.age()
    env.run()
    selected = env.run(ATTN_PLUGINS="other")
    assert selected["from_file"] is True
    assert selected["AttentionBackendEnum"] == {"OTHER": ["other.m:O", "other", "1.0"]}


def test_a_block_applies_on_top_of_a_warm_cache(env):
    """Blocking, then unblocking, a plugin needs no rescan: each process reads the cache."""
    env.dist("plug")
    env.dist("other", entry_points={GROUP: {"OTHER": "other.m:O"}})
    env.age()
    env.run()
    everything = {"FLASH_ATTN": ["plug.m:B", "plug", "1.0"], "OTHER": ["other.m:O", "other", "1.0"]}
    assert env.run()["AttentionBackendEnum"] == everything
    blocked = env.run(ATTN_BLOCK_PLUGINS="Plug")
    assert blocked["from_file"] is True
    assert blocked["AttentionBackendEnum"] == {"OTHER": ["other.m:O", "other", "1.0"]}
    unblocked = env.run()
    assert (unblocked["from_file"], unblocked["AttentionBackendEnum"]) == (True, everything)


def outcomes_in(file: Path) -> dict:
    return marshal.loads(file.read_bytes()[4:])[5]  # noqa: S302 - attn's own file


def test_variables_the_merge_does_not_read_reuse_the_cached_merge(env):
    """A job's own ATTN_* variables, or the selection's, neither rescan nor grow the file."""
    env.dist("plug")
    env.age()
    env.run()
    before = file_of(env).read_bytes()
    for job in range(3):
        out = env.run(ATTN_JOB_ID=str(job), ATTN_ATTENTION_BACKEND="TORCH_SDPA")
        assert (out["from_file"], flash(out)) == (True, ["plug.m:B", "plug", "1.0"])
    assert file_of(env).read_bytes() == before
    assert len(outcomes_in(file_of(env))) == 2  # one merge per registry


def test_conflict_warning_fires_from_the_cache_too(env):
    """The conflict warning is the same, word for word, with and without a cache hit."""
    env.dist("claim-a")
    env.dist("claim-b")
    env.age()
    first, second = env.run(), env.run()
    assert second["from_file"] is True
    assert [w[0] for w in first["warnings"]] == ["ConflictWarning"]
    assert second["warnings"] == first["warnings"]


def test_strict_errors_fire_from_the_cache_too(env):
    """Under ATTN_STRICT=1 a conflict raises in every process, cached scan or not."""
    env.dist("claim-a")
    env.dist("claim-b")
    env.age()
    env.run()
    assert len(env.files()) == 1
    first, second = env.run(ATTN_STRICT="1"), env.run(ATTN_STRICT="1")
    assert first["error"][0] == "PluginProblemError"
    assert "'FLASH_ATTN' is provided by 2 distributions" in first["error"][1]
    assert second["error"] == first["error"]


def file_of(env: Env) -> Path:
    (name,) = env.files()
    return env.cache / "attn" / name


def _owned_by_another_user(path: Path) -> None:
    os.chown(path, 12345, 12345)  # the tests run as root, which may give files away


def _writable_by(bits: int):
    def change(path: Path) -> None:
        path.chmod(stat.S_IMODE(path.stat().st_mode) | bits)

    change.__name__ = "group-writable" if bits == stat.S_IWGRP else "other-writable"
    return change


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
@pytest.mark.parametrize("what", ["file", "folder"])
@pytest.mark.parametrize(
    "change",
    [_owned_by_another_user, _writable_by(stat.S_IWGRP), _writable_by(stat.S_IWOTH)],
    ids=["another-owner", "group-writable", "other-writable"],
)
def test_a_cache_that_is_not_the_users_alone_is_never_read(env, what, change):
    """A file, or a folder, owned by another user or writable by others is never read."""
    env.dist("plug")
    env.age()
    env.run()
    assert env.run()["from_file"] is True
    file = file_of(env)
    change(file if what == "file" else file.parent)
    data = file.read_bytes()
    assert env.run()["from_file"] is False
    if what == "folder":  # nothing is written into it either
        assert (env.files(), file.read_bytes()) == ([file.name], data)


#: A lookup, then what ``attn list --json`` says about FLASH_ATTN, in one process each.
LOOKUP = (
    "import attn, json; b = attn.AttentionBackendEnum['FLASH_ATTN']\n"
    "print(json.dumps([b.get_path(), b.is_overridden()]))"
)
LISTING = (
    "import json, contextlib, io; from attn.cli import main; out = io.StringIO()\n"
    "with contextlib.redirect_stdout(out): main(['list', '--json'])\n"
    "r = json.loads(out.getvalue())['registries'][0]\n"
    "row = next(b for b in r['backends'] if b['name'] == 'FLASH_ATTN')\n"
    "used = [p['distribution'] for p in r['plugins'] if p['name'] == 'FLASH_ATTN'"
    " and p['status'] == 'used']\n"
    "print(json.dumps([row['path'], row['overridden'], row['distribution'], used]))"
)


def _strings(data, where=()):
    """Where each string in nested tuples and dict values is, and the string."""
    if type(data) is str:
        yield where, data
    elif type(data) is tuple:
        for i, item in enumerate(data):
            yield from _strings(item, (*where, i))
    elif type(data) is dict:
        for i, item in enumerate(data.values()):
            yield from _strings(item, (*where, i))


def _changed(data, where, new):
    """*data* with the string at *where* replaced by *new*."""
    if not where:
        return new
    head, *rest = where
    if type(data) is dict:
        key = list(data)[head]
        return {**data, key: _changed(data[key], rest, new)}
    return (*data[:head], _changed(data[head], rest, new), *data[head + 1 :])


def test_no_edit_of_the_file_splits_listing_from_lookups(env):
    """Whatever string of its own cache file a user edits, attn list and lookups agree."""
    env.dist("plug", entry_points={GROUP: {"FLASH_ATTN": "plug.m:B"}})
    env.age()
    env.run()
    assert env.run()["from_file"] is True
    file = file_of(env)
    # The edit fixes the checksum too: the file is then read as attn's own.
    original = marshal.loads(file.read_bytes()[4:])  # noqa: S302 - the file the test had written
    # In the scan's records and in the merge's result (not the key or the stamps).
    spots = [(w, t) for w, t in _strings(original) if w[0] >= 3 and "plug" in t]
    assert len(spots) >= 5
    for where, string in spots:
        text = checksummed(_changed(original, where, string.replace("plug", "evil")))
        file.write_bytes(text)  # the same owner and mode: the user's own edit
        path, overridden = env.run(LOOKUP)
        file.write_bytes(text)
        listed, listed_overridden, distribution, used = env.run(LISTING)
        assert (listed, listed_overridden) == (path, overridden), where
        assert used == ([distribution] if overridden else []), where


@pytest.mark.parametrize("first_here", [False, True])
def test_a_refresh_that_finds_another_answer_is_seen_by_every_next_process(env, first_here):
    """After refresh() finds what the cache missed, the next processes see it, any sys.path.

    *first_here*: the refreshing process's own sys.path has no file yet, so its first lookup
    already scanned the edit and its refresh() finds the answer it held: the other files go too.
    """
    env.dist("plug")
    other = env.dist("other", entry_points={"console_scripts": {"other": "other.m:main"}})
    elsewhere = env.root / "elsewhere"
    elsewhere.mkdir()
    age(elsewhere)
    env.age()
    wider = {"PYTHONPATH": os.pathsep.join((str(env.site), str(elsewhere)))}
    for extra in ({}, wider):
        env.run(**extra)
        assert env.run(**extra)["from_file"] is True
    assert len(env.files()) == 2
    # An edit no stamp sees: a distribution that is no plugin gains an entry point in place.
    with (other / "entry_points.txt").open("a", encoding="utf-8") as handle:
        handle.write(f"[{GROUP}]\nNEW = other.m:N\n")
    assert "NEW" not in env.run(**wider)["AttentionBackendEnum"]
    third = {"PYTHONPATH": os.pathsep.join((str(elsewhere), str(env.site)))} if first_here else {}
    assert "NEW" in env.run(REFRESHED, **third)["AttentionBackendEnum"]
    for extra in ({}, wider):
        assert "NEW" in env.run(**extra)["AttentionBackendEnum"]


ATTENTION_ONLY = "import attn\nattn.AttentionBackendEnum.FLASH_ATTN.get_path()\n"
#: An engine started before the refresh(): it merges its other registry when let go.
STARTED_EARLIER = f"""{ATTENTION_ONLY}print("up", flush=True)
input()  # another process refreshes meanwhile
attn.MLAPrefillBackendEnum.FLASH_ATTN.get_path()
print("done")
"""


#: An engine whose read of the file is held (after the bytes, before its checks) until told.
HELD_READ = """
import marshal
import attn
from attn.registry import _cache

class Held:
    def __getattr__(self, name):
        return getattr(marshal, name)

    def loads(self, data):
        print("read", flush=True)
        input()  # another process refreshes meanwhile
        return marshal.loads(data)

_cache.marshal = Held()
attn.AttentionBackendEnum.FLASH_ATTN.get_path()
_cache.marshal = marshal
attn.MLAPrefillBackendEnum.FLASH_ATTN.get_path()
print("done")
"""


#: A process whose scan is held (done, not yet written) until told.
HELD_SCAN = """
import attn
from attn.registry import discovery

real = discovery.scan_host

def held(*args, **kwargs):
    scanned = real(*args, **kwargs)
    print("scanned", flush=True)
    input()  # another process refreshes meanwhile
    return scanned

discovery.scan_host = held
attn.AttentionBackendEnum.FLASH_ATTN.get_path()
print("done")
"""


def refreshed_while_held(env, engine_code: str, ready: str, *, warm: bool) -> None:
    """Hold an engine at *ready*, edit what no stamp sees and refresh() elsewhere, let it go:
    the engine must leave the repaired file as the refresh wrote it. *warm*: the file is there
    first, holding the scan and the attention registry's merge only."""
    env.dist("plug")
    other = env.dist("other", entry_points={"console_scripts": {"other": "other.m:main"}})
    env.age()
    for _ in range(2 if warm else 0):
        env.run(ATTENTION_ONLY + "print('{}')")
    engine = subprocess.Popen(
        [sys.executable, "-c", engine_code],
        cwd=env.cwd,
        env=env.environ(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert engine.stdout is not None
    assert engine.stdout.readline() == ready
    with (other / "entry_points.txt").open("a", encoding="utf-8") as handle:  # unseen by stamps
        handle.write(f"[{GROUP}]\nNEW = other.m:N\n")
    assert "NEW" in env.run(REFRESHED)["AttentionBackendEnum"]
    (file,) = (env.cache / "attn").iterdir()
    refreshed = file.read_bytes()
    assert engine.communicate("\n", timeout=60)[0] == "done\n"
    assert file.read_bytes() == refreshed  # the engine wrote its older scan nowhere
    assert "NEW" in env.run()["AttentionBackendEnum"]


def test_a_process_started_before_a_refresh_does_not_write_its_old_scan_back(env):
    """A process that read the file before a refresh() leaves the repaired file alone."""
    refreshed_while_held(env, STARTED_EARLIER, "up\n", warm=True)


def test_a_file_replaced_while_a_process_reads_it_is_not_overwritten_by_that_process(env):
    """A refresh() that writes while another process reads the old file: that one writes none."""
    refreshed_while_held(env, HELD_READ, "read\n", warm=True)  # the old file's bytes, read


def test_a_scan_that_began_before_a_refresh_does_not_write_over_it(env):
    """A process that scanned before another's refresh() wrote the file leaves that file alone."""
    refreshed_while_held(env, HELD_SCAN, "scanned\n", warm=False)  # before the edit


def _warm_beside_a_non_plugin(env):
    """A plugin and a non-plugin distribution, their scan cached; the non-plugin's folder."""
    env.dist("plug")
    other = env.dist("other", entry_points={"console_scripts": {"other": "other.m:main"}})
    env.age()
    env.run()
    assert env.run()["from_file"] is True
    return other


def _refresh_is_seen_by_the_next_process(env, other):
    """An edit of *other*'s entry points that no stamp sees, then refresh(): the next one scans."""
    with (other / "entry_points.txt").open("a", encoding="utf-8") as handle:
        handle.write(f"[{GROUP}]\nNEW = other.m:N\n")
    assert "NEW" in env.run(REFRESHED)["AttentionBackendEnum"]
    after = env.run()
    assert (after["from_file"], "NEW" in after["AttentionBackendEnum"]) == (False, True)


def test_a_cache_folder_attn_cannot_write_to_is_not_read(env):
    """A file that refresh() could not replace is not trusted: the next process scans."""
    other = _warm_beside_a_non_plugin(env)
    folder = env.cache / "attn"
    if os.geteuid() == 0:  # root writes anywhere but in an immutable folder
        made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False)
        if made.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {made.stderr.decode().strip()}")
    else:
        folder.chmod(0o500)
    try:
        _refresh_is_seen_by_the_next_process(env, other)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o700)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chattr +i needs root")
def test_a_cache_file_attn_cannot_replace_is_not_read(env):
    """An immutable file (chattr +i), which refresh() can neither delete nor replace: not read."""
    other = _warm_beside_a_non_plugin(env)
    (file,) = (env.cache / "attn").iterdir()
    made = subprocess.run(["chattr", "+i", str(file)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is not available here: {made.stderr.decode().strip()}")
    try:
        _refresh_is_seen_by_the_next_process(env, other)
    finally:
        subprocess.run(["chattr", "-i", str(file)], check=True)


def test_a_refresh_right_after_an_install_writes_the_cache_again(env):
    """refresh() within the racy tick of an install writes the file; it is trusted once aged."""
    env.dist("plug")
    env.age()
    env.run()
    (before,) = env.files()
    written = (env.cache / "attn" / before).read_bytes()
    env.dist("new", entry_points={GROUP: {"NEW": "new.m:N"}})  # installed a moment ago
    assert "NEW" in env.run(REFRESHED)["AttentionBackendEnum"]
    assert env.files() == [before]
    assert (env.cache / "attn" / before).read_bytes() != written  # the new answer, on disk
    assert env.run()["from_file"] is False  # within the racy tick: not trusted, scanned again
    env.age()
    env.run()
    out = env.run()
    assert (out["from_file"], "NEW" in out["AttentionBackendEnum"]) == (True, True)


def test_a_new_answer_deletes_the_hosts_other_files_and_no_one_elses(env):
    """A refresh that finds another answer deletes this host's stale files, not other hosts'."""
    env.dist("plug")
    other = env.dist("other", entry_points={"console_scripts": {"other": "other.m:main"}})
    env.age()
    env.run()
    folder = env.cache / "attn"
    stale = "attn-0123456789abcdef.marshal"  # this host's, for another sys.path
    kept = ["attn-other-0123456789abcdef.marshal", "tiny-0123456789abcdef.marshal", "attn-1.txt"]
    for name in (stale, *kept):
        (folder / name).write_bytes(b"")
    with (other / "entry_points.txt").open("a", encoding="utf-8") as handle:
        handle.write(f"[{GROUP}]\nNEW = other.m:N\n")
    assert "NEW" in env.run(REFRESHED)["AttentionBackendEnum"]
    assert stale not in env.files()
    assert set(kept) <= set(env.files())


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a folder to another user")
def test_root_makes_no_cache_folder_in_another_users_home(env):
    """Root with another user's HOME (sudo -E) makes no root-owned ~/.cache there: no cache."""
    env.dist("plug")
    home = env.root / "home"
    home.mkdir()
    _owned_by_another_user(home)
    env.age()
    variables = {"XDG_CACHE_HOME": "", "HOME": str(home)}
    first, second = env.run(**variables), env.run(**variables)
    assert flash(first) == flash(second) == ["plug.m:B", "plug", "1.0"]
    assert (list(home.iterdir()), second["from_file"]) == ([], False)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a link to another user")
def test_a_cache_folder_that_is_a_symlink_gets_no_file(env):
    """A symlink at the cache folder's path (another user's, in a shared one) gets no file."""
    env.dist("plug")
    elsewhere = env.root / "elsewhere"
    elsewhere.mkdir()
    env.cache.mkdir(mode=0o777)
    env.cache.chmod(0o777)
    (env.cache / "attn").symlink_to(elsewhere)
    os.lchown(env.cache / "attn", 12345, 12345)
    env.age()
    first, second = env.run(), env.run()
    assert flash(first) == flash(second) == ["plug.m:B", "plug", "1.0"]
    assert (list(elsewhere.iterdir()), second["from_file"]) == ([], False)


def test_a_relative_xdg_cache_home_is_ignored(env):
    """A relative XDG_CACHE_HOME is not used (XDG rules): the cache goes to ~/.cache."""
    env.dist("plug")
    home = env.root / "home"
    home.mkdir()
    env.age()
    variables = {"XDG_CACHE_HOME": "relative", "HOME": str(home)}
    env.run(**variables)
    assert env.run(**variables)["from_file"] is True
    assert not (env.cwd / "relative").exists()
    assert len(list((home / ".cache" / "attn").iterdir())) == 1


def test_another_sys_path_has_a_cache_of_its_own(env):
    """A process with one more sys.path entry never takes the answer cached for fewer."""
    env.dist("plug")
    extra = env.root / "extra"
    (extra / "new-1.0.dist-info").mkdir(parents=True)
    (extra / "new-1.0.dist-info" / "METADATA").write_text("Name: new\nVersion: 1.0\n", "utf-8")
    (extra / "new-1.0.dist-info" / "entry_points.txt").write_text(
        f"[{GROUP}]\nNEW = new.m:N\n", "utf-8"
    )
    age(extra)
    env.age()
    env.run()
    assert env.run()["from_file"] is True
    wider = env.run(PYTHONPATH=os.pathsep.join((str(env.site), str(extra))))
    assert wider["AttentionBackendEnum"]["NEW"] == ["new.m:N", "new", "1.0"]


def test_the_testing_kits_variables_key_the_cached_merge(env):
    """A process under the testing kit's variables never takes the merge cached without them."""
    env.dist("plug")
    fakes = env.root / "fakes"
    fakes.mkdir()
    age(fakes)
    env.age()
    env.run()
    assert flash(env.run()) == ["plug.m:B", "plug", "1.0"]
    kit = env.run(_ATTN_TESTING_SITES=str(fakes))
    assert (kit["from_file"], kit["AttentionBackendEnum"]) == (True, {})


TOY = """
import json, time, warnings
START = time.time_ns()
from attn.registry import _cache
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from toyhost import ToyEnum
    ToyEnum["SLOW"]
held = _cache._SHARED.get("toy")
print(json.dumps([held is not None and held[1].started < START, [str(w.message) for w in caught]]))
"""


def test_a_members_new_default_is_not_hidden_by_the_cached_merge(env):
    """The rejected plugin's warning says what stays in effect as the host's enum says now.

    The warning depends on whether the member has a default, which the host's code decides: a
    host checkout that gives FAST a default must not get the cached "'FAST' is not available".
    """
    host = env.root / "hostsrc"
    host.mkdir()
    module = host / "toyhost.py"
    code = "from attn.registry import BackendEnum\n"
    code += "class ToyEnum(BackendEnum, group='toy.backends', host='toy', noun='toy backend'):\n"
    code += "    SLOW = 'toyhost:Slow'\n    FAST = None\n"
    module.write_text(code, encoding="utf-8")
    env.extra["PYTHONPATH"] = os.pathsep.join((str(env.site), str(host)))
    env.dist("toy", entry_points={"toy.backends": {}}, requires=())
    env.dist(
        "toy-plugin", entry_points={"toy.backends": {"FAST": "toy_plugin:F"}}, requires=["toy>=5"]
    )
    age(host)
    env.age()
    assert "'FAST' is not available" in env.run(TOY)[1][0]
    assert env.run(TOY)[0] is True  # read from the file
    before = module.stat()
    module.write_text(code.replace("FAST = None", "FAST = 'toyhost:Fast'"), encoding="utf-8")
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    from_file, (warned,) = env.run(TOY)
    assert from_file
    assert "the built-in FAST stays in effect" in warned, warned


@pytest.mark.parametrize("module", ["_findings.py", "codes.py", "errors.py"])
def test_an_edit_of_attns_own_code_invalidates_the_cache(env, tmp_path, module):
    """A process running other attn code (an upgrade, an edit) does not trust the file.

    A cached merge holds `Code` values and errors.py's texts: a checkout that changes only
    codes.py made every warm `attn list` fail decoding a code the enum no longer had.
    """
    copy = tmp_path / "attn-copy"
    shutil.copytree(
        Path(attn.__file__).parent, copy / "attn", ignore=shutil.ignore_patterns("__pycache__")
    )
    env.extra["PYTHONPATH"] = os.pathsep.join((str(copy), str(env.site)))
    env.dist("plug")
    age(copy)
    env.age()
    env.run()
    assert env.run()["from_file"] is True
    checks = copy / "attn" / "registry" / module
    before = checks.stat()
    checks.write_text(checks.read_text(encoding="utf-8") + "\n# 0.1.1\n", encoding="utf-8")
    os.utime(checks, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert env.run()["from_file"] is False


def test_a_sibling_discovered_after_a_chdir_reads_the_new_folder(tmp_path, monkeypatch):
    """A relative sys.path entry is read again in a new working folder, by the next registry."""
    for name in ("first", "second"):
        info = tmp_path / name / "site" / f"{name}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Name: {name}\nVersion: 1.0\n", encoding="utf-8")
        (info / "entry_points.txt").write_text(
            f"[{PREFILL}]\n{name.upper()} = {name}.m:P\n", encoding="utf-8"
        )
    monkeypatch.chdir(tmp_path / "first")
    monkeypatch.syspath_prepend("site")
    state_of(attn.AttentionBackendEnum).ensure()
    monkeypatch.chdir(tmp_path / "second")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # neither declares a requirement on attn
        assert attn.MLAPrefillBackendEnum["SECOND"].get_path() == "second.m.P"


def test_a_removed_working_folder_is_not_an_error(env):
    """A process whose working folder was removed finds its plugins, and the cache works.

    sys.path's ``""`` (``python -c`` puts it first) then finds nothing, as in
    importlib.metadata; the absolute entries are read as usual.
    """
    env.dist("plug")
    env.age()
    gone = env.root / "gone"
    leave = f"import os\nos.mkdir({str(gone)!r})\nos.chdir({str(gone)!r})\nos.rmdir(os.getcwd())\n"
    first, second = env.run(leave + SCRIPT), env.run(leave + SCRIPT)
    assert (first["from_file"], second["from_file"]) == (False, True)
    assert flash(first) == flash(second) == ["plug.m:B", "plug", "1.0"]
    assert first["warnings"] == second["warnings"] == []


def test_refresh_never_reads_the_cache(env, monkeypatch):
    """refresh() scans sys.path even when the cache file would be trusted."""
    info = env.dist("plug")
    env.age()
    env.run()
    rewrite_in_place(info / "entry_points.txt", "plug.m:B", "plug.x:B")
    code = SCRIPT.replace(
        "            state.ready()\n", "            state.ready()\n            registry.refresh()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=env.cwd,
        env=env.environ(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert flash(json.loads(done.stdout)) == ["plug.x:B", "plug", "1.0"]


def test_refresh_opens_no_cache_file_to_read(env):
    """Not even to compare answers: a process whose first call is refresh() only writes."""
    env.dist("plug")
    env.age()
    env.run()
    code = f"""
import json, sys
opened = []
folder = {str(env.cache / "attn")!r}
def hook(event, args):
    if event == "open" and str(args[0]).startswith(folder):
        opened.append([str(args[0]), args[2] & os.O_ACCMODE == os.O_RDONLY])
sys.addaudithook(hook)
import os, attn
attn.AttentionBackendEnum.refresh()
print(json.dumps(opened))
"""
    opened = env.run(code)
    assert opened  # the file is written again
    assert [path for path, read_only in opened if read_only] == []


def _cached_environment(sites, tmp_path, xdg, monkeypatch, build, *aged):
    """*build*'s environment, aged, with a cache folder: its two registries, undiscovered."""
    monkeypatch.chdir(tmp_path)
    build(sites, tmp_path)
    age(tmp_path, *aged)
    monkeypatch.delenv("ATTN_NO_CACHE", raising=False)
    # Not under tmp_path, which is a sys.path entry in some of the environments.
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    return [state_of(attn.AttentionBackendEnum), state_of(attn.MLAPrefillBackendEnum)]


def _reference_discovery(monkeypatch, registries):
    """What the reference reader discovers, with no cache at all."""
    monkeypatch.setenv("ATTN_NO_CACHE", "1")
    monkeypatch.setenv("ATTN_READER", "reference")
    _cache.forget()
    importlib.invalidate_caches()
    return [state.diagnose() for state in registries]


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
def test_cached_scan_gives_the_reference_discovery(  # noqa: PLR0917
    sites, runtime, tmp_path, tmp_path_factory, monkeypatch, build
):
    """Read back from the file, every environment discovers what importlib.metadata finds."""
    xdg = tmp_path_factory.mktemp("xdg")
    registries = _cached_environment(sites, tmp_path, xdg, monkeypatch, build, runtime.site)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for state in registries:
            state.ready()
    before = time.time_ns()
    _cache.forget()
    cached = [state.diagnose() for state in registries]
    assert _cache._SHARED["attn"][1].started < before  # read from the file: an earlier scan
    assert cached == _reference_discovery(monkeypatch, registries)


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
def test_a_merge_from_the_file_gives_the_reference_result_without_the_pipeline(  # noqa: PLR0917
    sites, runtime, tmp_path, tmp_path_factory, monkeypatch, build
):
    """A warm listing's result comes from the file, and equals the reference discovery."""
    xdg = tmp_path_factory.mktemp("xdg")
    registries = _cached_environment(sites, tmp_path, xdg, monkeypatch, build, runtime.site)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for state in registries:
            state.ready()  # the cold merge: writes the file, result included
        _cache.forget()
        for state in registries:
            state.reset()
            state.ready()  # a merge from the file
    assert all(state._layers.warm is not None for state in registries)

    def no_pipeline(*args: object) -> None:
        raise AssertionError("the pipeline ran for a merge from the file")

    with monkeypatch.context() as patched:
        patched.setattr(type(registries[0]), "_pipeline", no_pipeline)
        cached = [state.ensure() for state in registries]
    assert cached == _reference_discovery(monkeypatch, registries)


def test_a_result_round_trips_through_plain_data():
    """What the cache stores is marshal-able and gives the same result, structured fields too."""
    data = marshal.loads(marshal.dumps(plain(_result())))  # noqa: S302 - our own bytes
    assert result_from(data) == _result()
    assert result_from(data).findings == (LOAD_FAILURE,)
    assert result_from(data).plugins[1].code is Code.SHADOWED  # the code, not its text


#: What resolving a backend must not cost once the cache holds the answer.
WARM_FORBIDDEN = (
    "packaging",
    "importlib.metadata",
    "email",
    "zipfile",
    "pathlib",
    "json",
    "difflib",
    # the records of the readers and of listing, and the dataclasses they are made with
    "dataclasses",
    "attn.registry._scan",
    "attn.registry._metadata",
    "attn.registry.report",
    "attn.registry.codes",  # the finding codes, and the warnings a merge issues
    # selection and the kernels' facts: only a select() needs them
    "attn.registry.selection",
    "attn.backends._facts",
)

WARM_SCRIPT = """
import sys
sys.path.insert(0, {site!r})
import attn
attn.AttentionBackendEnum["FLASH_ATTN"].get_path()
attn.AttentionBackendEnum["ADDED"].get_path()
attn.MLAPrefillBackendEnum["FLASH_ATTN"].get_path()
print(" ".join(sorted(m for m in {forbidden!r} + ("attn.registry.discovery",) if m in sys.modules)))
"""


def _imported(env: Env, **extra: str) -> list[str]:
    """Which of :data:`WARM_FORBIDDEN` (and the pipeline) a fresh process resolving imports."""
    code = WARM_SCRIPT.format(site=str(env.site), forbidden=WARM_FORBIDDEN)
    # -I: no PYTHON* variables, no user site, no script folder: only what attn imports.
    done = subprocess.run(
        [sys.executable, "-I", "-c", code],
        cwd=env.cwd,
        env={"XDG_CACHE_HOME": str(env.cache), "PATH": os.environ.get("PATH", ""), **extra},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.split()


def test_warm_path_imports_none_of_the_heavy_modules(env):
    """After a cache hit, resolving backends imports no packaging, metadata reader or pipeline."""
    # A requirement only packaging checks (a dev release), so the cold process imports it.
    env.dist(
        "plug",
        entry_points={GROUP: {"FLASH_ATTN": "plug.m:B", "ADDED": "plug.m:A"}},
        requires=("attn>=0.1.dev0",),
    )
    env.age()
    cold = _imported(env)  # the first process scans: the pipeline and packaging load
    assert {"attn.registry.discovery", "packaging"} <= set(cold)
    assert _imported(env) == []
