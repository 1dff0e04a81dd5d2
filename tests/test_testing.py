"""The pytest plugin ``attn.testing``, run as its users run it: ``pytest -p attn.testing``.

Each test writes a test module with ``pytester`` and runs pytest on it (in this
process, or in a subprocess where the environment matters). "Installed"
plugins are distributions the ``site`` fixture puts on ``sys.path`` before the
inner run, as pip would put them in site-packages.
"""

from __future__ import annotations

import atexit
import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

#: How long an inner pytest run in a subprocess may take.
SUBPROCESS_TIMEOUT = 120

BACKEND_MODULE = '''
from attn import AttentionBackend


class VendorFastImpl:
    def __init__(self, *, scale=None, causal=False):
        self.scale = scale


class VendorFastBackend(AttentionBackend):
    """A vendor's attention backend."""

    @classmethod
    def get_impl_cls(cls):
        return VendorFastImpl
'''

#: What an inner test module starts with: a fake plugin adding VENDOR_FAST.
PREAMBLE = f"""
import os
import sys

import pytest

from attn import AttentionBackendEnum

BACKEND_MODULE = {BACKEND_MODULE!r}


def add_vendor(attn_plugins, **kwargs):
    return attn_plugins.add(
        "vendor-fast",
        {{"attn.backends": {{"VENDOR_FAST": "vendor_fast.backend:VendorFastBackend"}}}},
        files={{"vendor_fast/__init__.py": "", "vendor_fast/backend.py": BACKEND_MODULE}},
        **kwargs,
    )
"""


@pytest.fixture
def installed(site):
    """A plugin 'installed' in the environment: site-dist overrides FLASH_ATTN."""
    site.dist("site-dist", entry_points={"attn.backends": {"FLASH_ATTN": "plug.mod:SiteBackend"}})
    site.module("plug.mod", BACKEND_MODULE.replace("VendorFast", "Site"))
    return site


def run_inner(pytester, body: str, *args: str, subprocess: bool = False):
    pytester.makepyfile(test_inner=PREAMBLE + textwrap.dedent(body))
    args = ("-p", "attn.testing", "-W", "error", "-p", "no:cacheprovider", *args)
    if subprocess:
        return pytester.runpytest_subprocess(*args, timeout=SUBPROCESS_TIMEOUT)
    return pytester.runpytest(*args)


def test_add_writes_a_real_distribution_that_lookups_find(pytester):
    """add() writes METADATA, entry_points.txt and files; the new backend resolves and loads."""
    result = run_inner(
        pytester,
        """
        def test_add(attn_plugins):
            info = add_vendor(attn_plugins, version="2.5", requires=("attn>=0.1",))
            assert info.name == "vendor_fast-2.5.dist-info"
            assert info.parent == attn_plugins.root
            assert sys.path[0] == str(attn_plugins.root)
            metadata = (info / "METADATA").read_text()
            assert "Name: vendor-fast\\nVersion: 2.5\\nRequires-Dist: attn>=0.1\\n" in metadata
            backend = AttentionBackendEnum["VENDOR_FAST"]
            assert backend.get_path() == "vendor_fast.backend.VendorFastBackend"
            assert backend.get_class().get_impl_cls().__name__ == "VendorFastImpl"


        def test_add_a_package_nested_in_folders(attn_plugins):
            attn_plugins.add(
                "vendor-deep",
                {"attn.backends": {"VENDOR_DEEP": "vendor.kernels.deep:VendorFastBackend"}},
                files={"vendor/kernels/deep.py": BACKEND_MODULE},
            )
            assert AttentionBackendEnum["VENDOR_DEEP"].get_class().__name__ == "VendorFastBackend"
        """,
    )
    result.assert_outcomes(passed=2)


def test_installed_plugins_are_left_out(pytester, installed):
    """With the fixture, a plugin installed in the environment is not discovered."""
    result = run_inner(
        pytester,
        """
        def test_without_fixture():
            assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.SiteBackend"

        def test_with_fixture(attn_plugins):
            add_vendor(attn_plugins)
            assert not AttentionBackendEnum.FLASH_ATTN.is_overridden()
            assert AttentionBackendEnum["VENDOR_FAST"].name == "VENDOR_FAST"
        """,
    )
    result.assert_outcomes(passed=2)


def test_include_installed_brings_them_back(pytester, installed):
    """include_installed = True refreshes the registries with installed plugins and fakes."""
    result = run_inner(
        pytester,
        """
        def test_include(attn_plugins):
            add_vendor(attn_plugins)
            assert not AttentionBackendEnum.FLASH_ATTN.is_overridden()
            attn_plugins.include_installed = True
            assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.SiteBackend"
            assert AttentionBackendEnum["VENDOR_FAST"].name == "VENDOR_FAST"
            attn_plugins.include_installed = False
            assert not AttentionBackendEnum.FLASH_ATTN.is_overridden()
        """,
    )
    result.assert_outcomes(passed=1)


def test_subprocesses_see_the_fakes_and_not_the_installed_plugins(pytester, installed, monkeypatch):
    """A subprocess started by the test lists the fakes only, or both with include_installed."""
    monkeypatch.setenv("PYTHONPATH", str(installed.root))
    result = run_inner(
        pytester,
        """
        import json
        import subprocess


        def listed():
            done = subprocess.run(
                [sys.executable, "-m", "attn", "list", "attn.backends", "--json"],
                capture_output=True, text=True, check=True, timeout=60,
            )
            plugins = json.loads(done.stdout)["registries"][0]["plugins"]
            return sorted((p["name"], p["distribution"], p["status"]) for p in plugins)


        def test_subprocess(attn_plugins):
            add_vendor(attn_plugins)
            assert listed() == [("VENDOR_FAST", "vendor-fast", "used")]
            attn_plugins.include_installed = True
            assert listed() == [
                ("FLASH_ATTN", "site-dist", "used"),
                ("VENDOR_FAST", "vendor-fast", "used"),
            ]
        """,
        subprocess=True,
    )
    result.assert_outcomes(passed=1)


def test_everything_is_restored_after_the_test(pytester, installed, monkeypatch):
    """Runtime registrations, clears, fakes, sys.path, PYTHONPATH and ATTN_* are undone."""
    monkeypatch.setenv("ATTN_PLUGINS", "site-dist")
    monkeypatch.delenv("ATTN_STRICT", raising=False)
    result = run_inner(
        pytester,
        """
        import attn

        BEFORE = {}


        def test_record():
            BEFORE["path"] = list(sys.path)
            BEFORE["pythonpath"] = os.environ.get("PYTHONPATH")
            attn.register_backend(AttentionBackendEnum.XFORMERS, "plug.mod:SiteBackend")


        def test_change_everything(attn_plugins):
            add_vendor(attn_plugins, requires=())
            os.environ["ATTN_STRICT"] = "0"
            os.environ["ATTN_PLUGINS"] = "vendor-fast"
            attn.register_backend(AttentionBackendEnum.TRITON_ATTN, "plug.mod:SiteBackend")
            AttentionBackendEnum.XFORMERS.clear_override()
            sys.path.append("/nowhere")
            loaded = AttentionBackendEnum["VENDOR_FAST"].get_class()
            assert loaded.__module__ == "vendor_fast.backend"


        def test_back_as_before():
            assert sys.path == BEFORE["path"]
            assert os.environ.get("PYTHONPATH") == BEFORE["pythonpath"]
            assert "ATTN_STRICT" not in os.environ
            assert os.environ["ATTN_PLUGINS"] == "site-dist"
            assert "vendor_fast" not in sys.modules  # imported from the fake: gone
            assert "vendor_fast.backend" not in sys.modules
            assert AttentionBackendEnum.XFORMERS.get_path() == "plug.mod.SiteBackend"
            assert not AttentionBackendEnum.TRITON_ATTN.is_overridden()
            assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.SiteBackend"
            with pytest.raises(ValueError, match="Unknown attention backend: 'VENDOR_FAST'"):
                AttentionBackendEnum["VENDOR_FAST"]
            # A refresh keeps runtime registrations: only the one made before is left.
            AttentionBackendEnum.refresh()
            assert AttentionBackendEnum.XFORMERS.get_path() == "plug.mod.SiteBackend"
            assert not AttentionBackendEnum.TRITON_ATTN.is_overridden()
        """,
    )
    result.assert_outcomes(passed=3)


def test_a_namespace_package_of_one_test_is_gone_in_the_next(pytester):
    """A fake's package without __init__.py is removed too: the next test's files are read."""
    result = run_inner(
        pytester,
        """
        BACK = "from attn import AttentionBackend\\nclass B(AttentionBackend):\\n    VALUE = {}\\n"


        def add(attn_plugins, value, **more):
            files = {"nspkg/mod.py": BACK.format(value), **more}
            attn_plugins.add("ns-plug", {"attn.backends": {"NSB": "nspkg.mod:B"}}, files=files)


        def test_one(attn_plugins):
            add(attn_plugins, 1)
            assert AttentionBackendEnum["NSB"].get_class().VALUE == 1


        def test_two(attn_plugins):
            add(attn_plugins, 2, **{"nspkg/__init__.py": ""})
            assert AttentionBackendEnum["NSB"].get_class().VALUE == 2
            assert "nspkg" in sys.modules


        def test_none_left():
            assert "nspkg" not in sys.modules
        """,
    )
    result.assert_outcomes(passed=3)


def test_conflict_warnings_surface_in_the_test(pytester):
    """Two fakes claiming one name warn where the test touches the registry, not in add()."""
    result = run_inner(
        pytester,
        """
        from attn import AttnWarning


        def test_conflict(attn_plugins):
            add_vendor(attn_plugins)
            attn_plugins.add(
                "vendor-slow",
                {"attn.backends": {"VENDOR_FAST": "vendor_fast.backend:VendorFastBackend"}},
            )
            with pytest.warns(AttnWarning, match="provided by 2 distributions"):
                AttentionBackendEnum["VENDOR_FAST"]
        """,
    )
    result.assert_outcomes(passed=1)


def test_strict_mode_errors_surface_at_the_first_access(pytester):
    """Under ATTN_STRICT=1 an incompatible fake makes the registry's first access raise."""
    result = run_inner(
        pytester,
        """
        from attn.registry import PluginProblemError


        def test_strict(attn_plugins, monkeypatch):
            monkeypatch.setenv("ATTN_STRICT", "1")
            add_vendor(attn_plugins, requires=("attn>=99",))
            with pytest.raises(PluginProblemError, match="requires attn>=99, installed"):
                AttentionBackendEnum["FLASH_ATTN"]
        """,
    )
    result.assert_outcomes(passed=1)


def test_a_control_naming_an_installed_plugin_is_no_problem_under_the_fixture(
    pytester, installed, monkeypatch
):
    """ATTN_PREFER/ATTN_PLUGINS naming a plugin the fixture leaves out is not "not installed"."""
    monkeypatch.setenv("ATTN_PREFER", "site-dist")
    result = run_inner(
        pytester,
        """
        def test_prefer(attn_plugins, monkeypatch):
            monkeypatch.setenv("ATTN_STRICT", "1")
            add_vendor(attn_plugins)
            assert AttentionBackendEnum["VENDOR_FAST"].get_path().endswith("VendorFastBackend")

        def test_only(attn_plugins, monkeypatch):
            monkeypatch.setenv("ATTN_PLUGINS", "site-dist,vendor-fast")
            add_vendor(attn_plugins)
            assert AttentionBackendEnum["VENDOR_FAST"].get_path().endswith("VendorFastBackend")

        def test_a_name_of_nothing_still_is(attn_plugins, monkeypatch):
            from attn import AttnWarning

            monkeypatch.setenv("ATTN_PREFER", "no-such-dist")
            add_vendor(attn_plugins)
            with pytest.warns(AttnWarning, match="'no-such-dist', which is not an installed"):
                AttentionBackendEnum["VENDOR_FAST"]
        """,
    )
    result.assert_outcomes(passed=3)


def test_add_refuses_requires_given_as_one_string(pytester):
    """requires=("attn>=99") lost its comma: a TypeError, not a Requires-Dist per character."""
    result = run_inner(
        pytester,
        """
        def test_bad(attn_plugins):
            with pytest.raises(TypeError) as info:
                attn_plugins.add("x", {}, requires=("attn>=99"))
            assert str(info.value) == "requires='attn>=99' is one string: pass ('attn>=99',)"
        """,
    )
    result.assert_outcomes(passed=1)


def test_a_distribution_name_ends_where_its_text_ends(pytester):
    """A name with a line break after it is no distribution name (``$`` would accept it)."""
    result = run_inner(
        pytester,
        """
        from attn.testing import _DISTRIBUTION_NAME


        def test_name():
            assert _DISTRIBUTION_NAME.match("flash-attn")
            assert not _DISTRIBUTION_NAME.match("flash-attn\\n")
        """,
    )
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            'add_vendor(attn_plugins); add_vendor(attn_plugins, version="2.0")',
            "'vendor-fast' was already added in this test",
        ),
        (
            'add_vendor(attn_plugins); attn_plugins.add("Vendor_Fast", {}, version="2.0")',
            "'Vendor_Fast' was already added in this test",
        ),
        (
            'attn_plugins.add("x", {}, files={"../escape.py": ""})',
            "files: '../escape.py' must be a relative path inside the plugin's folder",
        ),
        (
            'attn_plugins.add("x", {"attn.backends": {"A": "m:A\\nFLASH_ATTN = evil:B"}})',
            "'m:A\\nFLASH_ATTN = evil:B' has a line break",
        ),
        ('attn_plugins.add("x", {"attn.backends": {"A\\rB": "m:A"}})', "'A\\rB' has a line break"),
        ('attn_plugins.add("x\\nVersion: 9", {})', "'x\\nVersion: 9' has a line break"),
        (
            'attn_plugins.add("x", {}, requires=("attn\\u2028y",))',
            "'attn\\u2028y' has a line break",
        ),
    ],
)
def test_add_refuses_bad_arguments(pytester, call, message):
    """A second add(), a file outside the folder, a line break in metadata: a ValueError."""
    result = run_inner(
        pytester,
        f"""
        def test_bad(attn_plugins):
            with pytest.raises(ValueError) as info:
                {call}
            assert str(info.value).startswith({message!r})
        """,
    )
    result.assert_outcomes(passed=1)


def test_add_writes_a_name_attn_reports_as_invalid(pytester):
    """A host's test can fake a plugin with a bad backend name and see attn report it."""
    result = run_inner(
        pytester,
        """
        from attn.registry import diagnose

        def test_bad_name(attn_plugins):
            attn_plugins.add("bad-name", {"attn.backends": {"VENDOR-FAST": "m:C"}})
            [row] = diagnose(AttentionBackendEnum).plugins
            assert (row.name, row.status, row.code) == ("VENDOR-FAST", "invalid", "invalid-name")
        """,
    )
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        ('attn_plugins.add("a/b", {})', "ValueError", "distribution='a/b' is not a name pip"),
        (
            'attn_plugins.add("my plugin", {})',
            "ValueError",
            "distribution='my plugin' is not a name",
        ),
        ("attn_plugins.add(None, {})", "TypeError", "distribution=None is not a name pip"),
        ('attn_plugins.add("x", {}, version="1/0")', "ValueError", "version='1/0' is not a"),
        (
            'attn_plugins.add("x", {}, files={"": ""})',
            "ValueError",
            "files: '' must be a relative path inside the plugin's folder, of a file it",
        ),
        (
            'attn_plugins.add("x", {}, files={"m\\0.py": ""})',
            "ValueError",
            "files: 'm\\x00.py' must be a relative path inside the plugin's folder, of a file",
        ),
        (
            'attn_plugins.add("x", {"attn.backends": {"B": "m:C", "A=B": "m:C"}})',
            "ValueError",
            (
                "entry_points['attn.backends'] has 'A=B', which entry_points.txt cannot hold (no "
                "'=', no space at an end, nor '#', ';' or '[' first)"
            ),
        ),
        (
            'attn_plugins.add("x", {"attn.backends": {" A": "m:C"}})',
            "ValueError",
            "entry_points['attn.backends'] has ' A', which entry_points.txt cannot hold",
        ),
        (
            'attn_plugins.add("x", {"attn.backends": {"#A": "m:C"}})',
            "ValueError",
            "entry_points['attn.backends'] has '#A', which entry_points.txt cannot hold",
        ),
        (
            'attn_plugins.add("x", {"attn.backends": {None: "m:C"}})',
            "ValueError",
            "entry_points['attn.backends'] has None, which entry_points.txt cannot hold",
        ),
        (
            'attn_plugins.add("x", {}, version=1.10)',
            "TypeError",
            "version=1.1 is not a version pip installs: e.g. '2.0rc1'",
        ),
        (
            'attn_plugins.add("x", {"attn.backends": "m:C"})',
            "TypeError",
            "entry_points={'attn.backends': 'm:C'} is not {group: {name: 'm:Class'}}",
        ),
        (
            'attn_plugins.add("x", [("A", "m:C")])',
            "TypeError",
            "entry_points=[('A', 'm:C')] is not",
        ),
    ],
)
def test_add_refuses_what_could_never_be_installed_or_read(pytester, call, error, message):
    """A name or version pip would not install, a file the system refuses, a backend name attn
    would not read.

    Nothing of the refused plugin is left: the same name can be added right after.
    """
    result = run_inner(
        pytester,
        f"""
        def test_bad(attn_plugins):
            with pytest.raises({error}) as info:
                {call}
            assert str(info.value).startswith({message!r}), str(info.value)
            assert not list(attn_plugins.root.glob("*.dist-info"))
            attn_plugins.add("x", {{}})
        """,
    )
    result.assert_outcomes(passed=1)


def test_import_attn_registers_no_plugin():
    """import attn leaves attn.testing unimported, and attn declares no pytest11 entry point."""
    script = (
        "import sys, attn, attn.backends\n"
        "from importlib.metadata import distribution\n"
        "groups = {ep.group for ep in distribution('attn').entry_points}\n"
        "print('attn.testing' in sys.modules, 'pytest' in sys.modules, sorted(groups))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout == "False False ['console_scripts']\n"


#: A host of its own: tinyinfer, prefix TINYINFER, with one plugin installed.
HOST_MODULE = """
from attn.registry import Backend, BackendEnum


class Sampler(Backend):
    pass


class Greedy(Sampler):
    pass


class SamplerEnum(BackendEnum, group="tinyinfer.samplers", host="tinyinfer", interface=Sampler):
    GREEDY = "tinyinfer:Greedy"
    CUSTOM = None
"""

#: attn's own switches, set to values that would break attn's registries.
ATTN_SWITCHES = {
    "ATTN_DISABLE_PLUGINS": "1",
    "ATTN_PLUGINS": "nothing-here",
    "ATTN_STRICT": "1",
    "ATTN_READER": "bogus",
    "ATTN_NO_CACHE": "bogus",
    "_ATTN_TESTING_SITES": "/nowhere",
}


@pytest.fixture
def tinyinfer(site, monkeypatch):
    """tinyinfer 1.2 installed, with one installed plugin (installed-sampler overrides GREEDY)."""
    site.module("tinyinfer", HOST_MODULE)
    site.dist("tinyinfer", "1.2", requires=())
    installed = {"tinyinfer.samplers": {"GREEDY": "installed_sampler:Sampler"}}
    site.dist("installed-sampler", entry_points=installed, requires=("tinyinfer",))
    monkeypatch.setenv("PYTHONPATH", str(site.root))


def test_a_hosts_own_suite_uses_its_own_prefix(pytester, tinyinfer, monkeypatch):
    """tinyinfer's tests get TINYINFER_* isolation and restore; ATTN_* change nothing for them."""
    for name, value in ATTN_SWITCHES.items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(
        test_tinyinfer=f"""
        import json, os, subprocess, sys

        from tinyinfer import SamplerEnum

        ATTN_SWITCHES = {ATTN_SWITCHES!r}
        TURBO = "from tinyinfer import Sampler\\nclass Turbo(Sampler):\\n    pass\\n"
        LIST = (
            "from attn.cli import main; from tinyinfer import SamplerEnum; "
            "main(['list', '--json'], registries=[SamplerEnum])"
        )


        def test_a_fake_sampler(attn_plugins):
            attn_plugins.add(
                "tinyinfer-turbo",
                {{"tinyinfer.samplers": {{"TURBO": "turbo:Turbo"}}}},
                requires=("tinyinfer>=1.0",),
                files={{"turbo.py": TURBO}},
            )
            assert SamplerEnum.lookup("TURBO").get_class().__name__ == "Turbo"
            assert not SamplerEnum.GREEDY.is_overridden()  # the installed plugin is left out
            done = subprocess.run([sys.executable, "-c", LIST], capture_output=True, check=True)
            (listed,) = json.loads(done.stdout)["registries"]
            assert [p["distribution"] for p in listed["plugins"]] == ["tinyinfer-turbo"]
            assert os.environ["TINYINFER_NO_CACHE"] == "1"
            assert {{k: os.environ.get(k) for k in ATTN_SWITCHES}} == ATTN_SWITCHES
            assert "attn.backends" not in sys.modules  # attn's registries are not the kit's


        def test_after_the_fixture():
            assert not [k for k in os.environ if k.startswith(("TINYINFER_", "_TINYINFER_"))]
            assert {{k: os.environ.get(k) for k in ATTN_SWITCHES}} == ATTN_SWITCHES
            assert SamplerEnum.GREEDY.get_path() == "installed_sampler.Sampler"
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "attn.testing", "-W", "error", "-p", "no:cacheprovider", timeout=SUBPROCESS_TIMEOUT
    )
    result.assert_outcomes(passed=2)


def test_a_host_declared_during_the_test_gets_its_variables_back(pytester, monkeypatch):
    """A registry declared inside the test: its prefix's variables are restored, not dropped."""
    monkeypatch.setenv("LATE_STRICT", "1")
    pytester.makepyfile(
        test_late="""
        import os

        from attn.registry import BackendEnum


        def test_declares_a_host(attn_plugins):
            class Late(BackendEnum, group="late.backends", host="late"):
                A = "late.a:A"

            os.environ["LATE_STRICT"] = "0"
            os.environ["LATE_PLUGINS"] = "late-a"


        def test_after_the_fixture():
            assert (os.environ["LATE_STRICT"], os.environ.get("LATE_PLUGINS")) == ("1", None)
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "attn.testing", "-p", "no:cacheprovider", timeout=SUBPROCESS_TIMEOUT
    )
    result.assert_outcomes(passed=2)


def test_attn_registries_first_used_in_the_test_see_fakes_only(pytester, installed, monkeypatch):
    """A module that only imports attn: its subprocesses and its later lookups see fakes only."""
    monkeypatch.setenv("PYTHONPATH", str(installed.root))
    pytester.makepyfile(
        test_lazy=f"""
        import json, subprocess, sys

        import attn

        BACKEND_MODULE = {BACKEND_MODULE!r}
        FILES = {{"vendor_fast/__init__.py": "", "vendor_fast/backend.py": BACKEND_MODULE}}
        VENDOR = {{"attn.backends": {{"VENDOR_FAST": "vendor_fast.backend:VendorFastBackend"}}}}


        def test_a_subprocess(attn_plugins):
            attn_plugins.add("vendor-fast", VENDOR, files=FILES)
            command = [sys.executable, "-m", "attn", "list", "attn.backends", "--json"]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            plugins = json.loads(done.stdout)["registries"][0]["plugins"]
            assert [p["distribution"] for p in plugins] == ["vendor-fast"]


        def test_a_lookup_after_the_fake(attn_plugins):
            attn_plugins.add("vendor-fast", VENDOR, files=FILES)
            assert not attn.AttentionBackendEnum.FLASH_ATTN.is_overridden()
            assert attn.AttentionBackendEnum["VENDOR_FAST"].name == "VENDOR_FAST"
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "attn.testing", "-W", "error", "-p", "no:cacheprovider", timeout=SUBPROCESS_TIMEOUT
    )
    result.assert_outcomes(passed=2)


def test_a_suite_of_no_host_that_adds_no_plugin_runs_attn_without_the_installed(
    pytester, installed, monkeypatch
):
    """No registry declared and no fake added: attn's commands in a subprocess see no plugin."""
    monkeypatch.setenv("PYTHONPATH", str(installed.root))
    cache = pytester.path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    pytester.makepyfile(
        test_commands="""
        import json, subprocess, sys


        def test_the_commands(attn_plugins):
            command = [sys.executable, "-m", "attn", "list", "--json"]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            listed = json.loads(done.stdout)["registries"]
            assert [p["distribution"] for r in listed for p in r["plugins"]] == []
            done = subprocess.run([sys.executable, "-m", "attn", "doctor"], capture_output=True)
            assert done.returncode == 0, done.stdout
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "attn.testing", "-W", "error", "-p", "no:cacheprovider", timeout=SUBPROCESS_TIMEOUT
    )
    result.assert_outcomes(passed=1)
    assert not cache.exists()  # the user's cache is not written either


def test_attn_variables_are_restored_in_a_suite_that_never_looks_up(pytester, monkeypatch):
    """ATTN_* set by a test are undone although no attn registry was used in the process."""
    monkeypatch.delenv("ATTN_STRICT", raising=False)
    monkeypatch.setenv("ATTN_PLUGINS", "kept")
    pytester.makepyfile(
        test_env="""
        import os


        def test_sets(attn_plugins):
            os.environ["ATTN_STRICT"] = "1"
            os.environ["ATTN_PLUGINS"] = "something"


        def test_after_the_fixture():
            assert (os.environ.get("ATTN_STRICT"), os.environ["ATTN_PLUGINS"]) == (None, "kept")
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "attn.testing", "-p", "no:cacheprovider", timeout=SUBPROCESS_TIMEOUT
    )
    result.assert_outcomes(passed=2)


@pytest.mark.usefixtures("tinyinfer")
def test_a_host_declared_during_the_test_sees_the_fakes_only(pytester):
    """A registry whose module the test imports: its installed plugins are left out too."""
    pytester.makepyfile(
        test_late_host="""
        import os


        def test_declared_here(attn_plugins):
            from tinyinfer import SamplerEnum

            assert not SamplerEnum.GREEDY.is_overridden()
            assert os.environ["TINYINFER_NO_CACHE"] == "1"


        def test_after_the_fixture():
            from tinyinfer import SamplerEnum

            assert "TINYINFER_NO_CACHE" not in os.environ
            assert SamplerEnum.GREEDY.get_path() == "installed_sampler.Sampler"
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "attn.testing", "-W", "error", "-p", "no:cacheprovider", timeout=SUBPROCESS_TIMEOUT
    )
    result.assert_outcomes(passed=2)


CONFORMANCE = """
from attn import AttentionBackend, AttentionBackendEnum
from attn.testing import BackendConformance

{classes}

class TestBackend(BackendConformance):
    backend_class = {target}
    registry = AttentionBackendEnum
"""

GOOD = """
from attn import AttentionBackend


class Impl:
    pass


class Good(AttentionBackend):
    requires = ("flash-attn", "flashinfer-python")
    requires_modules = ("flash_attn", "flashinfer")

    @classmethod
    def get_impl_cls(cls):
        return Impl

    @classmethod
    def validate_configuration(cls, **settings):
        return [] if settings.get("device") in (None, "cuda") else ["CUDA only"]
"""


def test_conformance_passes_a_good_backend(pytester):
    """A conforming class, given as a class or as a path, passes every check."""
    pytester.makepyfile(good=GOOD)
    pytester.makepyfile(
        test_by_class=CONFORMANCE.format(classes="from good import Good", target="Good"),
        test_by_path=CONFORMANCE.format(classes="", target="'good:Good'"),
    )
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=16)
    result.stdout.fnmatch_lines(
        [
            "*::TestBackend::test_derives_from_the_registry_interface PASSED*",
            "*::TestBackend::test_get_name_returns_a_non_empty_str PASSED*",
            "*::TestBackend::test_get_impl_cls_is_overridden_and_returns_a_class PASSED*",
            "*::TestBackend::test_requires_is_a_tuple_of_distribution_names PASSED*",
            "*::TestBackend::test_requires_modules_match_requires PASSED*",
            "*::TestBackend::test_is_available_returns_a_bool PASSED*",
            "*::TestBackend::test_validate_configuration_returns_a_list_of_str PASSED*",
            "*::TestBackend::test_importing_the_module_imports_no_required_package PASSED*",
        ]
    )


BAD_CASES = {
    "test_derives_from_the_registry_interface": (
        "class Bad:\n    pass\n",
        (
            "Bad does not derive from attn.backends.AttentionBackend: "
            "declare it as class Bad(AttentionBackend)"
        ),
    ),
    "test_get_name_returns_a_non_empty_str": (
        (
            "class Bad(AttentionBackend):\n    @classmethod\n    def get_name(cls):\n"
            "        return ''\n"
        ),
        "Bad.get_name() returned '': return the backend's display name",
    ),
    "test_get_impl_cls_is_overridden_and_returns_a_class": (
        "class Bad(AttentionBackend):\n    pass\n",
        "Bad does not override get_impl_cls(): define a classmethod get_impl_cls()",
    ),
    "test_requires_is_a_tuple_of_distribution_names": (
        "class Bad(AttentionBackend):\n    requires = ('flash-attn>=2',)\n",
        "Bad.requires has 'flash-attn>=2', not a distribution name",
    ),
    "test_requires_modules_match_requires": (
        # Set after the class: a class defined so is refused (TypeError) first.
        "class Bad(AttentionBackend):\n    requires = ('a', 'b')\n\nBad.requires_modules = ('a',)",
        (
            "Bad.requires_modules is ('a',) for requires ('a', 'b'): give one import name "
            "per distribution"
        ),
    ),
    "test_is_available_returns_a_bool": (
        (
            "class Bad(AttentionBackend):\n    @classmethod\n    def is_available(cls):\n"
            "        return 1\n"
        ),
        "Bad.is_available() returned 1: return True or False",
    ),
    "test_validate_configuration_returns_a_list_of_str": (
        (
            "class Bad(AttentionBackend):\n    @classmethod\n"
            "    def validate_configuration(cls, **settings):\n        return 'CUDA only'\n"
        ),
        "Bad.validate_configuration(**{}) returned 'CUDA only': return a list of str",
    ),
    "test_importing_the_module_imports_no_required_package": (
        (
            "import wave\n\nclass Bad(AttentionBackend):\n    requires = ('wave-lib',)\n"
            "    requires_modules = ('wave',)\n"
        ),
        "importing bad imports wave: import kernel packages inside methods",
    ),
}


@pytest.mark.parametrize("check", sorted(BAD_CASES))
def test_conformance_failure_says_what_to_fix(pytester, check):
    """Each check fails on its own for a class that breaks it, with the fix in the message."""
    source, message = BAD_CASES[check]
    pytester.makepyfile(bad="from attn import AttentionBackend\n\n" + source)
    pytester.makepyfile(test_bad=CONFORMANCE.format(classes="from bad import Bad", target="Bad"))
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "-k", check)
    result.assert_outcomes(failed=1, deselected=7)
    assert message in result.stdout.str()


def test_an_import_name_made_from_a_versioned_requirement_points_at_requires(pytester):
    """requires = ('flash-attn>=2',) and no requires_modules: the fix is in requires too."""
    bad = "class Bad(AttentionBackend):\n    requires = ('flash-attn>=2',)\n"
    pytester.makepyfile(bad="from attn import AttentionBackend\n\n" + bad)
    pytester.makepyfile(test_bad=CONFORMANCE.format(classes="from bad import Bad", target="Bad"))
    pytester.syspathinsert()
    check = "test_requires_modules_match_requires"
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "-k", check)
    result.assert_outcomes(failed=1, deselected=7)
    assert (
        "Bad: 'flash_attn>=2' is not an import name: list bare names in requires, and in "
        "requires_modules the names they import as"
    ) in " ".join(result.stdout.str().split())


KERNEL = "class Kernel(AttentionBackend):\n    requires = ('kern-lib',)\n"


def kernel_record(site, *files):
    """kern-lib installed by a wheel without top_level.txt: a RECORD listing *files*."""
    info = site.dist("kern-lib", requires=())
    record = "".join(f"{f},,\n" for f in (*files, f"{info.name}/METADATA"))
    (info / "RECORD").write_text(record, encoding="utf-8")
    for listed in files:  # Python 3.13 lists only the files that exist
        (site.root / listed).parent.mkdir(exist_ok=True)
        (site.root / listed).write_text("", encoding="utf-8")
    return info


PROVIDING = [
    "kernlib_impl/__init__.py",
    "kernlib_impl.py",
    "kernlib_impl.cpython-311-x86_64-linux-gnu.so",
]


@pytest.mark.parametrize("how", ["top_level.txt", *PROVIDING])
def test_requires_modules_are_checked_against_what_the_distribution_provides(pytester, site, how):
    """kern-lib installed provides kernlib_impl: the derived name kern_lib fails, naming it."""
    if how == "top_level.txt":  # setuptools writes it; the files are not listed (no RECORD)
        info = site.dist("kern-lib", requires=())
        (info / "top_level.txt").write_text("kernlib_impl\n", encoding="utf-8")
    else:  # its RECORD lists a package, a module or an extension, a .pth and a script
        # Bytecode cached beside a module is no package: not named among what it provides.
        kernel_record(site, how, "kern_lib.pth", "../bin/kern-bench", "__pycache__/k.pyc")
    pytester.makepyfile(
        kernel="from attn import AttentionBackend\n\n" + KERNEL,
        fixed="from kernel import Kernel\n\nclass Fixed(Kernel):\n"
        "    requires_modules = ('kernlib_impl',)\n",
    )
    pytester.makepyfile(
        test_kernel=CONFORMANCE.format(classes="from kernel import Kernel", target="Kernel"),
        test_fixed=CONFORMANCE.format(classes="from fixed import Fixed", target="Fixed"),
    )
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "-k", "modules")
    result.assert_outcomes(failed=1, passed=1, deselected=14)
    assert (
        "Kernel: kern-lib is installed but provides kernlib_impl, not 'kern_lib': set "
        "requires_modules to the import names, in the order of requires"
    ) in " ".join(result.stdout.str().split())


def test_a_distribution_whose_files_name_no_module_is_not_compared(pytester, site):
    """An editable install with a script: RECORD lists a .pth and ../bin/kern-bench, no module."""
    kernel_record(site, "kern_lib.pth", "../bin/kern-bench")
    pytester.makepyfile(kernel="from attn import AttentionBackend\n\n" + KERNEL)
    pytester.makepyfile(
        test_kernel=CONFORMANCE.format(classes="from kernel import Kernel", target="Kernel")
    )
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "-k", "modules")
    result.assert_outcomes(passed=1, deselected=7)


def run_one_check(
    pytester, check: str, module: str, source: str, name: str, *, subprocess: bool = False
):
    """Write *module* (*source*) and a conformance test of its class *name*; run *check* alone."""
    pytester.makepyfile(**{module: source})
    test = CONFORMANCE.format(classes=f"from {module} import {name}", target=name)
    pytester.makepyfile(**{f"test_{module}": test})
    pytester.syspathinsert()
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    return run("-p", "attn.testing", "-p", "no:cacheprovider", "-k", check)


NOISY = """
import atexit, sys
from attn import AttentionBackend
{imports}
sys.stdout.write("vendor-fast: loaded")  # a banner without a newline
atexit.register(print, "bye")


class Noisy(AttentionBackend):
    requires = ("wave-lib", "vendor-fast")
    requires_modules = ("wave", "vendor_fast")
"""


@pytest.mark.parametrize(("imports", "message"), [("", None), ("import wave", "imports wave:")])
def test_the_import_check_reads_its_answer_past_what_the_module_prints(pytester, imports, message):
    """A banner at import, a line at exit: neither is a package the module imported."""
    check = "test_importing_the_module_imports_no_required_package"
    result = run_one_check(pytester, check, "noisy", NOISY.format(imports=imports), "Noisy")
    atexit.unregister(print)  # the module registered it in this process too, importing it
    out = " ".join(result.stdout.str().split())
    if message is None:
        result.assert_outcomes(passed=1, deselected=7)
    else:
        result.assert_outcomes(failed=1, deselected=7)
        assert f"importing noisy {message} import kernel packages inside methods" in out
    assert "loaded" not in out.partition("importing noisy")[2].partition(":")[0]


def test_the_import_check_passes_over_a_path_object_on_sys_path(pytester):
    """A pathlib.Path on sys.path, which Python's import system does not search, is left out."""
    source = (
        "import pathlib, sys\nfrom attn import AttentionBackend\n\n"
        "sys.path.append(pathlib.Path('/no-such-folder'))\n\nclass P(AttentionBackend):\n    pass\n"
    )
    check = "test_importing_the_module_imports_no_required_package"
    run_one_check(pytester, check, "pathy", source, "P", subprocess=True).assert_outcomes(
        passed=1, deselected=7
    )


def test_the_import_check_imports_the_module_the_path_names(pytester):
    """A public module that re-exports the class: attn imports it, so the check does too."""
    pytester.makepyfile(
        rx_classes="from attn import AttentionBackend\n\n"
        "class Bad(AttentionBackend):\n    requires = ('wave-lib',)\n"
        "    requires_modules = ('wave',)\n",
        rx_public="import wave\n\nfrom rx_classes import Bad\n",
    )
    pytester.makepyfile(test_rx=CONFORMANCE.format(classes="", target="'rx_public:Bad'"))
    pytester.syspathinsert()
    check = "test_importing_the_module_imports_no_required_package"
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "-k", check)
    result.assert_outcomes(failed=1, deselected=7)
    assert "importing rx_public imports wave: " in result.stdout.str()


def test_a_type_error_inside_a_classmethod_is_the_methods_own(pytester):
    """A bug in a correct classmethod shows its traceback, not advice to declare it again."""
    source = (
        "from attn import AttentionBackend\n\nclass Buggy(AttentionBackend):\n"
        "    @classmethod\n    def validate_configuration(cls, **settings):\n"
        "        return [] if settings.get('capability', 99) > 80 else ['old']\n"
    )
    check = "test_validate_configuration_returns_a_list_of_str"
    result = run_one_check(pytester, check, "buggy", source, "Buggy")
    result.assert_outcomes(failed=1, deselected=7)
    out = result.stdout.str()
    assert "TypeError: '>' not supported between instances of 'tuple' and 'int'" in out
    assert "buggy.py:6: TypeError" in out
    assert "declare it as a @classmethod" not in out


@pytest.mark.parametrize("derived", [True, False])
def test_requires_that_is_no_tuple_fails_every_check_reading_it_with_the_fix(pytester, derived):
    """requires = None: the checks that read it say what to fix, never a raw traceback."""
    base = "AttentionBackend" if derived else ""
    pytester.makepyfile(
        odd=f"from attn import AttentionBackend\n\nclass Odd({base}):\n    requires = None\n",
        test_odd=CONFORMANCE.format(classes="from odd import Odd", target="Odd"),
    )
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "--tb=line")
    out = result.stdout.str()
    message = "Odd.requires is None: make it a tuple of the distribution names the kernel needs"
    checks = ["requires_is_a_tuple", "requires_modules_match"]
    checks += ["importing_the_module", "is_available"] if derived else []  # else: no methods
    result.stdout.fnmatch_lines_random([f"FAILED *::test_{check}*" for check in checks])
    assert out.count(message) >= len(checks)  # each failure's line
    assert "Traceback" not in out
    assert "TypeError" not in out


def test_a_backend_of_another_registry_is_told_which_registry_it_is_for(pytester):
    """An MLA prefill class checked as an attention backend: the fix may be the registry."""
    source = "from attn import MLAPrefillBackend\n\nclass Prefill(MLAPrefillBackend):\n    pass\n"
    pytester.makeconftest(  # a host's registry of any Backend, declared first: not the closest
        "from attn.registry import Backend, BackendEnum\n\n"
        "class AnyEnum(BackendEnum, group='any.backends', host='any', interface=Backend):\n"
        "    X = 'm:X'\n\n"  # and one whose interface fails to import, which fits nothing
        "class LostEnum(BackendEnum, group='lost.backends', host='lost', interface='no_zz:I'):\n"
        "    Y = 'm:Y'\n"
    )
    check = "test_derives_from_the_registry_interface"
    result = run_one_check(pytester, check, "mla", source, "Prefill", subprocess=True)
    result.assert_outcomes(failed=1, deselected=7)
    assert (
        "Prefill does not derive from attn.backends.AttentionBackend: declare it as class "
        "Prefill(AttentionBackend), or set registry = MLAPrefillBackendEnum if it is one of its "
        "backends"
    ) in " ".join(result.stdout.str().split())


def test_a_class_deriving_from_a_protocol_interface_derives(pytester):
    """A registry whose interface is a Protocol issubclass() refuses: inheritance counts."""
    pytester.makepyfile(
        proto="from typing import Protocol\nfrom attn.registry import BackendEnum\n\n"
        "class Kernel(Protocol):\n    def run(self) -> None: ...\n\n"
        "class Heir(Kernel):\n    def run(self) -> None: ...\n\n"
        "class ProtoEnum(BackendEnum, group='proto.backends', host='proto', interface=Kernel):\n"
        "    HEIR = 'proto:Heir'\n",
        test_proto="import attn\nfrom attn.testing import BackendConformance\n"
        "from proto import Heir, ProtoEnum\n\n"
        "class TestHeir(BackendConformance):\n"
        "    backend_class = Heir\n    registry = ProtoEnum\n\n"
        "class TestHeirAsAttention(BackendConformance):\n"  # it is told ProtoEnum fits
        "    backend_class = Heir\n    registry = attn.AttentionBackendEnum\n",
    )
    pytester.syspathinsert()
    check = "test_derives_from_the_registry_interface"
    result = pytester.runpytest("-p", "attn.testing", "-k", check)
    result.assert_outcomes(passed=1, failed=1, deselected=14)
    assert "or set registry = ProtoEnum if it is one of its backends" in result.stdout.str()


NOT_DERIVED = """
class Impl:
    pass


class Plain:
    requires = ("vendor-kernels",)  # a kernel, named as on a backend (one import name each)

    @classmethod
    def get_impl_cls(cls):
        return Impl
"""


@pytest.mark.parametrize(
    ("classes", "target", "message"),
    [
        (
            "from plain import Plain",
            "Plain",
            (
                "Plain does not derive from attn.backends.AttentionBackend: declare it "
                "as class Plain(AttentionBackend)"
            ),
        ),
        (
            "",
            "'absent_module:Backend'",
            (
                "backend_class 'absent_module:Backend' cannot be imported: ModuleNotFoundError: "
                "No module named 'absent_module': set it to the class's 'module:QualName' path"
            ),
        ),
    ],
)
def test_every_check_of_a_class_it_cannot_use_says_what_to_fix(pytester, classes, target, message):
    """A class not derived from the interface, or not importable: each check names the fix."""
    pytester.makepyfile(plain=NOT_DERIVED)
    pytester.makepyfile(test_plain=CONFORMANCE.format(classes=classes, target=target))
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "--tb=line")
    # Not derived: the four checks that call its methods fail; the others hold or skip.
    failed = 4 if classes else 8
    assert result.parseoutcomes()["failed"] == failed
    out = result.stdout.str()
    assert out.count(message) >= failed  # in each failure (pytest may repeat it in a summary)
    assert not [raw for raw in ("AttributeError", "StopIteration", "Traceback") if raw in out]


MISMATCHED = """
from attn import AttentionBackend


class Mismatched(AttentionBackend):
    requires = ("kern-lib", "other")
    requires_modules = ("kern_lib",)
"""


def test_a_class_its_module_cannot_define_is_not_blamed_on_the_path(pytester):
    """The base refuses the class as its module runs: each check says to fix that, not the path."""
    pytester.makepyfile(mismatched=MISMATCHED)
    target = "'mismatched:Mismatched'"
    pytester.makepyfile(test_mismatched=CONFORMANCE.format(classes="", target=target))
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "--tb=line")
    assert result.parseoutcomes()["failed"] == 8
    out = result.stdout.str()
    reason = (
        "Mismatched.requires_modules ('kern_lib',) does not match requires ('kern-lib', 'other')"
    )
    assert out.count(f"'mismatched:Mismatched' cannot be imported: TypeError: {reason}") >= 8
    assert out.count("its module raised it as it was imported: fix the module or the class") >= 8
    assert "'module:QualName' path" not in out


@pytest.mark.parametrize(
    ("body", "target", "path_blamed"),
    [
        ("import absent_kernel_zz  # a kernel imported at module level", "toplevel:T", False),
        ("raise AttributeError('set up wrong')", "toplevel:T", False),
        ("", "toplevel:Absent", True),  # the module has no such class
        ("", "toplevel.sub:T", True),  # no such module of it
    ],
)
def test_only_a_wrong_path_is_blamed_on_the_path(pytester, body, target, path_blamed):
    """An error the module raises as it runs is its own, even an ImportError or AttributeError."""
    source = f"from attn import AttentionBackend\n{body}\nclass T(AttentionBackend):\n    pass\n"
    pytester.makepyfile(toplevel=source)
    pytester.makepyfile(test_top=CONFORMANCE.format(classes="", target=repr(target)))
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "--tb=line")
    assert result.parseoutcomes()["failed"] == 8
    out = " ".join(result.stdout.str().split())
    path_fix = "set it to the class's 'module:QualName' path, and make its module importable"
    module_fix = "its module raised it as it was imported: fix the module or the class"
    assert out.count(path_fix if path_blamed else module_fix) >= 8
    assert (module_fix if path_blamed else path_fix) not in out


KERNEL_INSIDE = """
from attn import AttentionBackend


class NeedsKernel(AttentionBackend):
    requires = ("absent-kernels-zz",)

    @classmethod
    def get_impl_cls(cls):
        from absent_kernels_zz import Impl

        return Impl
"""


def test_a_kernel_not_installed_here_skips_the_call_of_get_impl_cls(pytester):
    """The kernel is imported inside get_impl_cls(), as the docs advise: CI machines lack it."""
    test = CONFORMANCE.format(classes="from needs import NeedsKernel", target="NeedsKernel")
    pytester.makepyfile(needs=KERNEL_INSIDE, test_needs=test)
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "-rs")
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes
    assert outcomes["skipped"] == 2  # and validate_configuration, which it does not define
    result.stdout.fnmatch_lines(["*NeedsKernel needs absent-kernels-zz, not installed here*"])
    # Not declared in requires: a failure, with the ImportError.
    pytester.makepyfile(needs=KERNEL_INSIDE.replace('("absent-kernels-zz",)', "()"))
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "--tb=line")
    assert result.parseoutcomes()["failed"] == 1
    result.stdout.fnmatch_lines(["*ModuleNotFoundError: No module named 'absent_kernels_zz'*"])


FORGOTTEN = """
from attn import AttentionBackend


class Impl:
    pass


class Forgot(AttentionBackend):
    def get_name(self):
        return "FORGOT"

    @classmethod
    def get_impl_cls(cls):
        return Impl

    @classmethod
    def validate_configuration(cls, *, device):
        return []
"""


@pytest.mark.parametrize(
    ("check", "method"),
    [
        ("test_get_name_returns_a_non_empty_str", "get_name"),
        ("test_validate_configuration_returns_a_list_of_str", "validate_configuration"),
    ],
)
def test_a_method_that_cannot_be_called_on_the_class_says_what_to_fix(pytester, check, method):
    """A forgotten @classmethod, or a check without **settings: the fix, not a raw TypeError."""
    pytester.makepyfile(forgot=FORGOTTEN)
    pytester.makepyfile(
        test_forgot=CONFORMANCE.format(classes="from forgot import Forgot", target="Forgot")
    )
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "-k", check)
    result.assert_outcomes(failed=1, deselected=7)
    out = result.stdout.str()
    assert f"Forgot.{method}() raised TypeError: " in out
    assert "declare it as a @classmethod (hosts call it on the class)" in out


def test_sample_settings_given_as_one_dict_says_what_to_write(pytester):
    """sample_settings = {...}, its tuple forgotten: the fix, not a TypeError about ``**``."""
    test = CONFORMANCE.format(classes="from good import Good", target="Good")
    pytester.makepyfile(good=GOOD, test_good=test + "    sample_settings = {'device': 'cuda'}\n")
    pytester.syspathinsert()
    check = "test_validate_configuration_returns_a_list_of_str"
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "-k", check)
    result.assert_outcomes(failed=1, deselected=7)
    out = result.stdout.str()
    assert (
        "TestBackend.sample_settings is {'device': 'cuda'}, a dict: make it a tuple of dicts, "
        "one call each, e.g. ({'device': 'cuda'},)"
    ) in out
    assert "Traceback" not in out
    assert "TypeError" not in out


NO_IMPORT_NAME = """
from attn import AttentionBackend


class Impl:
    pass


class Unnamed(AttentionBackend):
    requires = ("wave-lib",)
    requires_modules = ("wave lib",)  # a str (anything else fails as the class is defined)

    @classmethod
    def get_impl_cls(cls):
        return Impl
"""


def test_a_requires_modules_item_that_is_no_import_name_fails_every_check_reading_it(pytester):
    """requires_modules = ("wave lib",): each check reading it names the class, attribute, item."""
    pytester.makepyfile(unnamed=NO_IMPORT_NAME)
    test = CONFORMANCE.format(classes="from unnamed import Unnamed", target="Unnamed")
    pytester.makepyfile(test_unnamed=test)
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "attn.testing", "-p", "no:cacheprovider", "--tb=line")
    checks = ["requires_modules_match", "importing_the_module", "is_available"]
    result.stdout.fnmatch_lines_random([f"FAILED *::test_{check}*" for check in checks])
    assert result.parseoutcomes()["failed"] == len(checks)
    out = " ".join(result.stdout.str().split())
    message = (
        "Unnamed.requires_modules: 'wave lib' is not an import name: list bare names in requires, "
        "and in requires_modules the names they import as"
    )
    assert out.count(message) >= len(checks)
    assert not [raw for raw in ("AttributeError", "Traceback") if raw in out]
