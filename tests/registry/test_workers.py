"""Workers resolve like the driver: fingerprints, capture_state, apply_state, mismatches.

The process tests run a real driver script (a fresh, single-threaded
interpreter, so forking it never meets Python 3.12's warning about forking a
multi-threaded process; the script runs with ``-W error`` so it would fail
loudly if it did). The driver declares runtime registrations, captures the
state, and starts children with each start method through
``multiprocessing.Pool`` and ``concurrent.futures.ProcessPoolExecutor``.
Children find the synthetic plugin sites through ``PYTHONPATH`` (which the
driver inherits, and spawn and forkserver children get as the driver's
``sys.path``). Where a test makes a child's environment differ, the driver
edits its own ``sys.path`` or ``os.environ`` after capturing and before
starting the workers, which then start in that other environment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import attn
from attn import AttentionBackendEnum, MLAPrefillBackendEnum, StateMismatchError
from attn.registry import BackendEnum
from attn.registry.enum import declared_registries, state_of
from attn.registry.workers import (
    BackendResolution,
    CapturedRegistry,
    RuntimeRegistration,
    WorkerState,
)

ACME = {
    "attn.backends": {"FLASH_ATTN": "plug.mod:Backend", "ACME": "plug.mod:Other"},
    "attn.mla_prefill_backends": {"ACME_PREFILL": "plug.mod:Prefill"},
}
OTHER = {"attn.backends": {"OTHER": "plug.mod:Outer.Inner"}}

TOY_REGISTRY = '''\
from attn.registry import Backend, BackendEnum


class ToyBackend(Backend):
    """A toy host's backend."""


class ToyEnum(BackendEnum, group="toyhost.backends", host="toyhost"):
    SLOW = "toyhost.registry:ToyBackend"
'''

DRIVER_MODULE = '''\
from attn import AttentionBackend, MLAPrefillBackend


class DriverBackend(AttentionBackend):
    """Registered at runtime by the driver."""


class DriverPrefill(MLAPrefillBackend):
    """Registered at runtime by the driver."""
'''

DRIVER = '''\
"""A driver: registers at runtime, captures, starts workers, prints JSON."""

import concurrent.futures as cf
import functools
import json
import multiprocessing as mp
import os
import sys

import attn
from attn import AttentionBackendEnum as A, MLAPrefillBackendEnum as M
from attn.registry import build_report
from attn.registry.enum import declared_registries


@attn.register_backend(A.CUSTOM)
class MainBackend(attn.AttentionBackend):
    """Registered with the decorator in the driver's __main__."""


def resolved():
    """Every name of every registry: origin, path, distribution, version, class loaded."""
    table = {}
    for registry in declared_registries():
        rows = {}
        for row in build_report(registry).backends:
            loaded = None
            if row.path is not None:
                loaded = registry[row.name].get_class().__qualname__
            rows[row.name] = [
                row.origin, row.path, row.distribution, row.distribution_version, loaded
            ]
        table[registry.__name__] = {"rows": rows, "fingerprint": registry.fingerprint()}
    return table


def differ(scenario):
    """After capturing: make the environment that new workers inherit differ."""
    if scenario == "plugins-env":
        os.environ["ATTN_PLUGINS"] = "attn-other"
    elif scenario == "not-installed":
        sys.path.remove(os.environ["ACME_SITE"])
    elif scenario == "other-version":
        sys.path.insert(0, os.environ["V2_SITE"])
    elif scenario == "host-missing":
        sys.path.remove(os.environ["TOY_SITE"])
    elif scenario == "driver-module-missing":
        sys.path.remove(os.environ["DRIVER_SITE"])


def custom_class():
    """Load what CUSTOM of the MLA registry names, reporting the error."""
    try:
        return M.CUSTOM.get_class().__qualname__
    except attn.BackendLoadError as exc:
        return f"{type(exc).__name__}: {exc}"


def main():
    method, mode, scenario = sys.argv[1:4]
    import toyhost.registry  # another host's registry, declared in an importable module

    attn.register_mla_prefill_backend(M.CUSTOM, "drvmod:DriverPrefill")
    attn.register_backend(A["ACME"], "drvmod:DriverBackend")
    state = attn.capture_state()
    ctx = mp.get_context(method)
    out = {"parent": resolved()}
    differ(scenario)
    if mode == "pool":
        with ctx.Pool(2, initializer=attn.apply_state, initargs=(state,)) as pool:
            out["children"] = pool.starmap_async(resolved, [()] * 4, chunksize=1).get(60)
    elif mode == "executor":
        with cf.ProcessPoolExecutor(
            2, mp_context=ctx, initializer=attn.apply_state, initargs=(state,)
        ) as ex:
            out["children"] = [f.result(60) for f in [ex.submit(resolved) for _ in range(4)]]
    elif mode == "bare":
        with ctx.Pool(1) as pool:
            out["children"] = [pool.apply_async(resolved).get(60)]
    elif mode == "apply":
        with ctx.Pool(1) as pool:
            try:
                pool.apply_async(attn.apply_state, (state,)).get(60)
            except attn.StateMismatchError as exc:
                out["error"] = {
                    "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
                    "message": str(exc),
                    "differences": exc.differences,
                    "missing": exc.missing_registries,
                }
            out["custom"] = pool.apply_async(custom_class).get(60)
    elif mode == "executor-init":
        with cf.ProcessPoolExecutor(
            1, mp_context=ctx, initializer=attn.apply_state, initargs=(state,)
        ) as ex:
            try:
                ex.submit(resolved).result(60)
            except cf.process.BrokenProcessPool as exc:
                out["broken"] = type(exc).__name__
    elif mode == "pool-init":
        with ctx.Pool(1, initializer=attn.apply_state, initargs=(state,)) as pool:
            try:
                pool.apply_async(os.getpid).get(3)
            except mp.TimeoutError:
                out["started"] = False
            pool.terminate()
    elif mode == "nocheck":
        nocheck = functools.partial(attn.apply_state, check=False)
        with ctx.Pool(1, initializer=nocheck, initargs=(state,)) as pool:
            out["children"] = [pool.apply_async(resolved).get(60)]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
'''

METHODS = ["fork", "spawn", "forkserver"]
# Under fork a child inherits the driver's tables and never rediscovers, so
# an environment that differs only matters to the other start methods.
FRESH = ["spawn", "forkserver"]


@pytest.fixture
def world(sites, tmp_path, plugin_source):
    """Plugin sites for the driver: attn-acme 1.0, attn-other, a toy host, the driver's module."""
    acme = sites.new("acme")
    acme.module("plug.mod", plugin_source)
    acme.dist("attn-acme", "1.0", entry_points=ACME)
    acme.dist("attn-other", "1.0", entry_points=OTHER)
    toy = sites.new("toy")
    toy.module("toyhost.registry", TOY_REGISTRY)
    toy.dist("toyhost", "3.0", requires=())
    driver = sites.new("driver")
    driver.module("drvmod", DRIVER_MODULE)
    v2 = sites.new("v2")
    v2.dist("attn-acme", "2.0", entry_points=ACME)
    sys.path.remove(str(v2.root))  # not installed for the driver
    script = tmp_path / "driver.py"
    script.write_text(DRIVER, encoding="utf-8")
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("ATTN_", "PYTHON"))
    }
    env.update(
        PYTHONPATH=os.pathsep.join(str(s.root) for s in (acme, toy, driver)),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        ACME_SITE=str(acme.root),
        TOY_SITE=str(toy.root),
        DRIVER_SITE=str(driver.root),
        V2_SITE=str(v2.root),
    )
    return {"script": script, "env": env, "cwd": tmp_path}


def drive(world, method, mode, scenario="-"):
    """Run the driver; return its JSON output and its stderr."""
    done = subprocess.run(
        [sys.executable, "-W", "error", str(world["script"]), method, mode, scenario],
        capture_output=True,
        text=True,
        env=world["env"],
        cwd=world["cwd"],
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


PLUGIN_ROWS = {
    "FLASH_ATTN": ["plugin", "plug.mod.Backend", "attn-acme", "1.0", "Backend"],
    "ACME": ["runtime", "drvmod.DriverBackend", None, None, "DriverBackend"],
    "OTHER": ["plugin", "plug.mod.Outer.Inner", "attn-other", "1.0", "Outer.Inner"],
    "CUSTOM": ["runtime", "__main__.MainBackend", None, None, "MainBackend"],
}
MLA_ROWS = {
    "ACME_PREFILL": ["plugin", "plug.mod.Prefill", "attn-acme", "1.0", "Prefill"],
    "CUSTOM": ["runtime", "drvmod.DriverPrefill", None, None, "DriverPrefill"],
}


def check_parent(parent):
    """The driver's own table: plugins, runtime registrations, the toy host."""
    attention = parent["AttentionBackendEnum"]["rows"]
    assert list(attention) == [*(m.name for m in AttentionBackendEnum), "ACME", "OTHER"]
    assert {n: attention[n] for n in PLUGIN_ROWS} == PLUGIN_ROWS
    assert attention["TORCH_SDPA"] == [
        "builtin",
        "attn.backends.attention.TorchSDPABackend",
        None,
        None,
        "TorchSDPABackend",
    ]
    mla = parent["MLAPrefillBackendEnum"]["rows"]
    assert list(mla) == [*(m.name for m in MLAPrefillBackendEnum), "ACME_PREFILL"]
    assert {n: mla[n] for n in MLA_ROWS} == MLA_ROWS
    assert parent["ToyEnum"]["rows"] == {
        "SLOW": ["builtin", "toyhost.registry.ToyBackend", None, None, "ToyBackend"]
    }


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", ["pool", "executor"])
def test_children_resolve_every_name_like_the_driver(world, method, mode):
    """Pool and ProcessPoolExecutor children, every start method: the driver's table exactly."""
    out, _ = drive(world, method, mode)
    check_parent(out["parent"])
    assert len(out["children"]) == 4
    for child in out["children"]:
        assert child == out["parent"]


@pytest.mark.parametrize("method", FRESH)
def test_without_apply_state_spawned_children_miss_runtime_registrations(world, method):
    """The problem apply_state solves: a fresh child has no driver registrations made in main()."""
    out, _ = drive(world, method, "bare")
    child = out["children"][0]
    assert child["MLAPrefillBackendEnum"]["rows"]["CUSTOM"] == [
        "builtin",
        None,
        None,
        None,
        None,
    ]
    assert child["AttentionBackendEnum"]["rows"]["ACME"] == [
        "plugin",
        "plug.mod.Other",
        "attn-acme",
        "1.0",
        "Other",
    ]
    assert (
        child["AttentionBackendEnum"]["fingerprint"]
        != (out["parent"]["AttentionBackendEnum"]["fingerprint"])
    )


FIX_ACME = (
    "To fix it, install the same plugin versions on every node "
    "(here: pip install 'attn-acme==1.0'), or set the same ATTN_PLUGINS in every process."
)
MISMATCHES = {
    "plugins-env": (
        "The backends in this process differ from the driver's:\n"
        "  AttentionBackendEnum.FLASH_ATTN\n"
        "    driver: plug.mod.Backend (plugin attn-acme 1.0)\n"
        "    worker: attn.backends.attention.FlashAttentionBackend (built-in)\n"
        "  MLAPrefillBackendEnum.ACME_PREFILL\n"
        "    driver: plug.mod.Prefill (plugin attn-acme 1.0)\n"
        "    worker: absent\n"
        "ATTN_PLUGINS is unset in the driver and 'attn-other' here (to match: unset ATTN_PLUGINS)\n"
        "To fix it, set the same ATTN_PLUGINS in every process."
    ),
    "not-installed": (
        "The backends in this process differ from the driver's:\n"
        "  AttentionBackendEnum.FLASH_ATTN\n"
        "    driver: plug.mod.Backend (plugin attn-acme 1.0)\n"
        "    worker: attn.backends.attention.FlashAttentionBackend (built-in)\n"
        "  AttentionBackendEnum.OTHER\n"
        "    driver: plug.mod.Outer.Inner (plugin attn-other 1.0)\n"
        "    worker: absent\n"
        "  MLAPrefillBackendEnum.ACME_PREFILL\n"
        "    driver: plug.mod.Prefill (plugin attn-acme 1.0)\n"
        "    worker: absent\n"
        "To fix it, install the same plugin versions on every node (here: pip install "
        "'attn-acme==1.0'; pip install 'attn-other==1.0'), or set the same ATTN_PLUGINS in "
        "every process."
    ),
    "other-version": (
        "The backends in this process differ from the driver's:\n"
        "  AttentionBackendEnum.FLASH_ATTN\n"
        "    driver: plug.mod.Backend (plugin attn-acme 1.0)\n"
        "    worker: plug.mod.Backend (plugin attn-acme 2.0)\n"
        "  MLAPrefillBackendEnum.ACME_PREFILL\n"
        "    driver: plug.mod.Prefill (plugin attn-acme 1.0)\n"
        "    worker: plug.mod.Prefill (plugin attn-acme 2.0)\n" + FIX_ACME
    ),
    "host-missing": (
        "The backends in this process differ from the driver's:\n"
        "  ToyEnum (toyhost.registry:ToyEnum, group 'toyhost.backends')\n"
        "    driver: declared\n"
        "    worker: absent: cannot import it (ModuleNotFoundError: No module named "
        "'toyhost')\n"
        "To fix it, install the same version of toyhost on every node, and declare "
        "registries in modules that workers import."
    ),
}
DIFFERENCES = {
    "plugins-env": [
        ["AttentionBackendEnum", "FLASH_ATTN"],
        ["MLAPrefillBackendEnum", "ACME_PREFILL"],
    ],
    "not-installed": [
        ["AttentionBackendEnum", "FLASH_ATTN"],
        ["AttentionBackendEnum", "OTHER"],
        ["MLAPrefillBackendEnum", "ACME_PREFILL"],
    ],
    "other-version": [
        ["AttentionBackendEnum", "FLASH_ATTN"],
        ["MLAPrefillBackendEnum", "ACME_PREFILL"],
    ],
    "host-missing": [],
}


@pytest.mark.parametrize("method", FRESH)
@pytest.mark.parametrize("scenario", sorted(MISMATCHES))
def test_a_differing_child_raises_state_mismatch(world, method, scenario):
    """ATTN_PLUGINS, a missing plugin, another version, a missing host: each backend named."""
    out, _ = drive(world, method, "apply", scenario)
    error = out["error"]
    assert error["type"] == "attn.StateMismatchError"
    assert error["message"] == MISMATCHES[scenario]
    assert error["differences"] == DIFFERENCES[scenario]
    assert error["missing"] == (["ToyEnum"] if scenario == "host-missing" else [])


@pytest.mark.parametrize("method", FRESH)
def test_executor_initializer_mismatch_breaks_the_pool_with_the_message(world, method):
    """A failing initializer breaks ProcessPoolExecutor; the worker's stderr has the message."""
    out, stderr = drive(world, method, "executor-init", "other-version")
    assert out["broken"] == "BrokenProcessPool"
    assert f"attn.StateMismatchError: {MISMATCHES['other-version']}\n" in stderr


def test_pool_initializer_mismatch_never_starts_a_worker(world):
    """Pool restarts a worker whose initializer fails: no task runs, stderr has the message."""
    out, stderr = drive(world, "spawn", "pool-init", "other-version")
    assert out["started"] is False
    assert f"attn.StateMismatchError: {MISMATCHES['other-version']}\n" in stderr


@pytest.mark.parametrize("method", FRESH)
def test_check_false_applies_without_raising(world, method):
    """check=False: registrations applied, the worker's own plugins in effect, nothing raised."""
    out, _ = drive(world, method, "nocheck", "other-version")
    child = out["children"][0]
    rows = child["AttentionBackendEnum"]["rows"]
    assert rows["FLASH_ATTN"] == ["plugin", "plug.mod.Backend", "attn-acme", "2.0", "Backend"]
    assert rows["ACME"] == PLUGIN_ROWS["ACME"]
    assert rows["CUSTOM"] == PLUGIN_ROWS["CUSTOM"]
    assert child["MLAPrefillBackendEnum"]["rows"]["CUSTOM"] == MLA_ROWS["CUSTOM"]


@pytest.mark.parametrize("method", FRESH)
def test_registration_whose_module_the_worker_lacks_fails_on_load(world, method):
    """A path is recorded as is: the state matches, get_class() names the registration."""
    out, _ = drive(world, method, "apply", "driver-module-missing")
    assert "error" not in out
    assert out["custom"] == (
        "BackendLoadError: Cannot load MLA prefill backend 'CUSTOM' from a runtime "
        "registration by __main__ (path 'drvmod:DriverPrefill'): ModuleNotFoundError: "
        "No module named 'drvmod'. Register an importable MLA prefill backend with "
        "attn.register_mla_prefill_backend(MLAPrefillBackendEnum.CUSTOM, 'module:Class')"
    )


# -- in this process: fingerprints, capture, apply, serialization --------------------


def fresh_worker():
    """This process as a new worker sees it: nothing discovered, nothing registered."""
    for registry in (AttentionBackendEnum, MLAPrefillBackendEnum):
        state_of(registry).reset()


def mismatch_of(state):
    """The StateMismatchError that applying *state* here raises."""
    with pytest.raises(StateMismatchError) as caught:
        attn.apply_state(state)
    return caught.value


def captured(state, name):
    return next(r for r in state.registries if r.registry == name)


@pytest.fixture
def acme(plugin_module):
    """attn-acme 1.0 installed on the first site."""
    plugin_module.dist("attn-acme", "1.0", entry_points=ACME)
    return plugin_module


def test_a_distribution_name_written_otherwise_resolves_alike(plugin_module):
    """Attn_Acme on the driver, attn-acme here: one release, the same fingerprint, no mismatch."""
    info = plugin_module.dist("Attn_Acme", "1.0", entry_points=ACME)
    state, fingerprint = attn.capture_state(), AttentionBackendEnum.fingerprint()
    metadata = info / "METADATA"
    metadata.write_text(metadata.read_text("utf-8").replace("Attn_Acme", "attn.acme"), "utf-8")
    fresh_worker()
    attn.apply_state(state)  # raises StateMismatchError if the spellings differed
    assert AttentionBackendEnum.fingerprint() == fingerprint
    assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.Backend"


@pytest.mark.parametrize(("driver", "here"), [("1.0", "1.0+cu121"), ("1.0", "1.0.0")])
def test_a_version_that_pip_takes_for_the_drivers_pin_is_reinstalled_exactly(
    plugin_module, driver, here
):
    """pip keeps 1.0+cu121 or 1.0.0 for 'attn-acme==1.0': the fix reinstalls 1.0 itself."""
    info = plugin_module.dist("attn-acme", driver, entry_points=ACME)
    state = attn.capture_state()
    metadata = info / "METADATA"
    metadata.write_text(metadata.read_text("utf-8").replace(driver, here), "utf-8")
    fresh_worker()
    message = str(mismatch_of(state))
    assert f"plug.mod.Backend (plugin attn-acme {here})" in message
    assert "(here: pip install --force-reinstall --no-deps 'attn-acme===1.0')" in message
    assert "pip install 'attn-acme==1.0'" not in message


def test_fingerprint_is_a_sha256_hex_string():
    """fingerprint() is 64 hex digits, stable across calls."""
    value = AttentionBackendEnum.fingerprint()
    assert len(value) == 64
    assert int(value, 16) >= 0
    assert AttentionBackendEnum.fingerprint() == value


def test_fingerprint_runs_discovery():
    """Asking for the fingerprint discovers the registry."""
    AttentionBackendEnum.fingerprint()
    assert state_of(AttentionBackendEnum).discovered_yet


def test_fingerprint_changes_with_a_plugin(acme, monkeypatch):
    """A plugin that overrides a backend changes the fingerprint; leaving it out restores it."""
    with_plugin = AttentionBackendEnum.fingerprint()
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    AttentionBackendEnum.refresh()
    without = AttentionBackendEnum.fingerprint()
    monkeypatch.delenv("ATTN_DISABLE_PLUGINS")
    AttentionBackendEnum.refresh()
    assert without != with_plugin
    assert AttentionBackendEnum.fingerprint() == with_plugin


def test_fingerprint_changes_with_a_runtime_registration(plugin_module):
    """Registering at runtime changes the fingerprint; clearing goes back."""
    before = MLAPrefillBackendEnum.fingerprint()
    attn.register_mla_prefill_backend(MLAPrefillBackendEnum.CPU, "plug.mod:Prefill")
    assert MLAPrefillBackendEnum.fingerprint() != before
    MLAPrefillBackendEnum.CPU.clear_override()
    assert MLAPrefillBackendEnum.fingerprint() == before


def test_registries_have_distinct_fingerprints():
    """The two registries' fingerprints differ (the group is part of it)."""
    assert AttentionBackendEnum.fingerprint() != MLAPrefillBackendEnum.fingerprint()


def test_capture_holds_the_resolved_table(acme):
    """capture_state() records every name with origin, path, distribution and version."""
    attn.register_backend(AttentionBackendEnum.CUSTOM, "plug.mod:Other")
    state = attn.capture_state()
    attention = captured(state, "AttentionBackendEnum")
    assert attention.module == "attn.backends"
    assert attention.qualname == "AttentionBackendEnum"
    assert attention.group == "attn.backends"
    assert attention.fingerprint == AttentionBackendEnum.fingerprint()
    rows = {b.name: b for b in attention.backends}
    assert [b.name for b in attention.backends] == [
        *(m.name for m in AttentionBackendEnum),
        "ACME",
    ]
    assert rows["FLASH_ATTN"] == BackendResolution(
        "FLASH_ATTN", "plugin", "plug.mod:Backend", "attn-acme", "1.0"
    )
    assert rows["CUSTOM"] == BackendResolution("CUSTOM", "runtime", "plug.mod:Other")
    assert rows["XFORMERS"] == BackendResolution(
        "XFORMERS", "builtin", "attn.backends.attention:XFormersBackend"
    )
    assert attention.runtime == (RuntimeRegistration("CUSTOM", "plug.mod:Other", __name__),)
    assert dict(attention.controls) == {
        "ATTN_DISABLE_PLUGINS": None,
        "ATTN_PLUGINS": None,
        "ATTN_BLOCK_PLUGINS": None,
        "ATTN_PREFER": None,
    }


def test_capture_includes_every_declared_registry():
    """Both of attn's registries, and any other declared so far, are captured."""
    names = [r.registry for r in attn.capture_state().registries]
    assert names == [r.__name__ for r in declared_registries()]
    assert {"AttentionBackendEnum", "MLAPrefillBackendEnum"} <= set(names)


def test_state_pickles_and_compares_equal(acme):
    """A WorkerState survives pickling unchanged (initargs, Ray)."""
    attn.register_backend(AttentionBackendEnum.CUSTOM, "plug.mod:Other")
    state = attn.capture_state()
    assert pickle.loads(pickle.dumps(state)) == state  # noqa: S301


def test_state_round_trips_through_json(acme):
    """to_json() is plain JSON data that from_json() reads back equal."""
    attn.register_backend(AttentionBackendEnum.CUSTOM, "plug.mod:Other")
    AttentionBackendEnum.ROCM_ATTN.clear_override()
    state = attn.capture_state()
    text = json.dumps(state.to_json())
    assert WorkerState.from_json(json.loads(text)) == state


def test_records_are_immutable():
    """Captured records cannot be changed after the fact."""
    row = BackendResolution("X", "builtin", "m:C")
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.name = "Y"  # type: ignore[misc]


def _saved(**changes):
    data = attn.capture_state().to_json()
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "not a saved attn state: the state is list, expected an object"),
        (
            {"format": "other", "version": 1, "registries": []},
            "not a saved attn state: 'format' is 'other', expected 'attn-worker-state'",
        ),
        (  # a JSON file of something else: its keys are missing, not null
            {"registries": []},
            "not a saved attn state: 'format' is missing, expected 'attn-worker-state'",
        ),
        (
            {"format": None, "version": 1, "registries": []},
            "not a saved attn state: 'format' is None, expected 'attn-worker-state'",
        ),
        (
            {"format": "attn-worker-state", "registries": []},
            "not a saved attn state: 'version' is missing, expected 1",
        ),
        (
            {"format": "attn-worker-state", "version": 9, "registries": []},
            "not a saved attn state: 'version' is 9, expected 1",
        ),
        (
            {"format": "attn-worker-state", "version": 1, "registries": {}},
            "not a saved attn state: 'registries' is dict, expected an array",
        ),
    ],
)
def test_from_json_refuses_what_is_not_a_state(data, message):
    """Anything but a saved state is a ValueError saying what is wrong."""
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        WorkerState.from_json(data)


def test_from_json_refuses_a_bad_path():
    """A path that is not module:QualName is refused, located."""
    data = _saved()
    data["registries"][0]["backends"][0]["path"] = "not a path"
    with pytest.raises(ValueError, match=r"^not a saved attn state: registries\[0\]\.backends"):
        WorkerState.from_json(data)


def test_from_json_refuses_an_edited_table():
    """A table that does not match its fingerprint (edited by hand) is refused."""
    data = _saved()
    data["registries"][0]["backends"][0]["path"] = "elsewhere:Backend"
    with pytest.raises(ValueError, match=r"registries\[0\]\.fingerprint does not match"):
        WorkerState.from_json(data)


@pytest.mark.parametrize(
    "registration",
    [
        {"name": "FLASH_ATTN", "path": "os:getcwd"},  # not what the table resolves FLASH_ATTN to
        {"name": "no such name!", "path": "os:getcwd"},  # no row at all
    ],
)
def test_from_json_refuses_a_registration_the_table_does_not_show(registration):
    """A runtime registration must be a runtime row of its backends: else the file was edited."""
    data = _saved()
    data["registries"][0]["runtime"] = [registration]
    message = rf"registries\[0\]\.runtime has {registration['name']!r}, not a runtime row of its"
    with pytest.raises(ValueError, match=message):
        WorkerState.from_json(data)


def test_from_json_refuses_a_wrong_type():
    """A field of the wrong type names the field."""
    data = _saved()
    data["registries"][0]["backends"][0]["origin"] = 3
    with pytest.raises(
        ValueError,
        match=r"registries\[0\]\.backends\[0\]\.origin is 3, expected a string",
    ):
        WorkerState.from_json(data)


def test_apply_before_discovery_registers_and_matches(plugin_module):
    """Applying in a fresh process (nothing discovered yet) makes the registrations and passes."""
    attn.register_backend(AttentionBackendEnum.CUSTOM, "plug.mod:Other")
    state = attn.capture_state()
    fresh_worker()
    attn.apply_state(state)
    assert AttentionBackendEnum.CUSTOM.get_path() == "plug.mod.Other"
    assert AttentionBackendEnum.CUSTOM.get_class().__name__ == "Other"


def test_apply_after_discovery_registers_and_matches(plugin_module):
    """Applying after the worker discovered on its own gives the same result."""
    attn.register_backend(AttentionBackendEnum.CUSTOM, "plug.mod:Other")
    state = attn.capture_state()
    fresh_worker()
    AttentionBackendEnum["FLASH_ATTN"]
    attn.apply_state(state)
    assert AttentionBackendEnum.CUSTOM.get_path() == "plug.mod.Other"


def test_apply_replays_clears(acme):
    """A clear_override() in the driver is made again in the worker."""
    AttentionBackendEnum.FLASH_ATTN.clear_override()
    state = attn.capture_state()
    fresh_worker()
    assert AttentionBackendEnum.FLASH_ATTN.get_path() == "plug.mod.Backend"
    attn.apply_state(state)
    assert AttentionBackendEnum.FLASH_ATTN.get_path() == (
        "attn.backends.attention.FlashAttentionBackend"
    )


def test_apply_is_idempotent(plugin_module):
    """Applying twice changes nothing more."""
    attn.register_backend(AttentionBackendEnum.CUSTOM, "plug.mod:Other")
    state = attn.capture_state()
    attn.apply_state(state)
    attn.apply_state(state)
    assert attn.capture_state() == state


def test_a_worker_applying_a_state_imports_no_hashlib(tmp_path):
    """A worker checks its resolution row by row: no OpenSSL import at every start."""
    state_file = tmp_path / "state.pickle"
    driver = (
        "import attn, pickle\n"
        f"open({str(state_file)!r}, 'wb').write(pickle.dumps(attn.capture_state()))\n"
    )
    worker = (
        "import pickle, sys\n"
        f"state = pickle.loads(open({str(state_file)!r}, 'rb').read())\n"
        "import attn\n"
        "attn.apply_state(state)\n"
        "print('hashlib' in sys.modules, '_hashlib' in sys.modules)\n"
        "attn.AttentionBackendEnum.fingerprint()\n"
        "print('hashlib' in sys.modules)\n"
    )
    outputs = []
    for code in (driver, worker):  # fresh processes: only attn's own registries
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.split())
    assert outputs[1] == ["False", "False", "True"]


def test_a_tampered_fingerprint_with_the_same_rows_is_no_mismatch():
    """Equal rows are an equal resolution, whatever fingerprint the state carries."""
    state = attn.capture_state()
    edited = pickle.loads(pickle.dumps(state))  # noqa: S301 - our own bytes
    object.__setattr__(edited.registries[0], "fingerprint", "0" * 64)
    attn.apply_state(edited)  # no StateMismatchError


def test_apply_refuses_what_is_not_a_state():
    """apply_state() of anything else is a TypeError naming what it got."""
    with pytest.raises(TypeError, match=r"expects an attn\.WorkerState, got dict"):
        attn.apply_state({})  # type: ignore[arg-type]


def test_mismatch_in_process_names_the_backend(acme, monkeypatch):
    """A worker without the plugin (same process, rediscovered) gets the message."""
    state = attn.capture_state()
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    fresh_worker()
    error = mismatch_of(state)
    assert str(error) == (
        "The backends in this process differ from the driver's:\n"
        "  AttentionBackendEnum.FLASH_ATTN\n"
        "    driver: plug.mod.Backend (plugin attn-acme 1.0)\n"
        "    worker: attn.backends.attention.FlashAttentionBackend (built-in)\n"
        "  AttentionBackendEnum.ACME\n"
        "    driver: plug.mod.Other (plugin attn-acme 1.0)\n"
        "    worker: absent\n"
        "  MLAPrefillBackendEnum.ACME_PREFILL\n"
        "    driver: plug.mod.Prefill (plugin attn-acme 1.0)\n"
        "    worker: absent\n"
        "ATTN_DISABLE_PLUGINS is unset in the driver and '1' here "
        "(to match: unset ATTN_DISABLE_PLUGINS)\n"
        "To fix it, set the same ATTN_DISABLE_PLUGINS in every process."
    )
    assert isinstance(error, attn.AttnError)


def test_a_worker_on_another_version_of_the_host_is_told_to_install_the_drivers(acme):
    """acme needs the driver's newer attn: the fix names attn's version, not a local call."""
    captured = attn.capture_state().registries
    state = WorkerState(tuple(dataclasses.replace(r, host_version="99.0") for r in captured))
    metadata = acme.root / "attn_acme-1.0.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text("utf-8").replace("attn>=0.1", "attn>=99"), "utf-8")
    fresh_worker()
    with pytest.warns(attn.RejectedPluginWarning, match="requires attn>=99"):
        message = str(mismatch_of(state)).splitlines()
    assert f"attn is 99.0 in the driver and {attn.__version__} here" in message
    assert message[-1] == (
        "To fix it, install attn==99.0 on every node; install the same plugin versions on every "
        "node, or set the same ATTN_PLUGINS in every process."
    )


def test_a_plugin_the_drivers_disable_leaves_out_is_not_to_be_uninstalled(acme, monkeypatch):
    """ATTN_DISABLE_PLUGINS=1 in the driver keeps acme out there: the fix is the variable."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    fresh_worker()
    state = attn.capture_state()
    monkeypatch.delenv("ATTN_DISABLE_PLUGINS")
    fresh_worker()
    message = str(mismatch_of(state)).splitlines()
    assert message[-2:] == [
        (
            "ATTN_DISABLE_PLUGINS is '1' in the driver and unset here "
            "(to match: export ATTN_DISABLE_PLUGINS=1)"
        ),
        "To fix it, set the same ATTN_DISABLE_PLUGINS in every process.",
    ]


LOCAL_FIX = (
    "To fix it, call register_backend() and clear_override() in the driver, before "
    "capture_state(); "
)


def test_a_registration_made_in_the_worker_alone_is_named_as_the_cause(acme):
    """The worker's own register_backend(): the fix is where to make it; no plugin undoes it."""
    state = attn.capture_state()
    fresh_worker()
    attn.register_backend(AttentionBackendEnum.TORCH_SDPA, "plug.mod:Other")
    assert str(mismatch_of(state)).splitlines()[-4:] == [
        "  AttentionBackendEnum.TORCH_SDPA",
        "    driver: attn.backends.attention.TorchSDPABackend (built-in)",
        "    worker: plug.mod.Other (runtime registration)",
        f"{LOCAL_FIX[:-2]}.",
    ]


def test_a_clear_made_in_the_worker_alone_is_named_as_the_cause(acme):
    """The worker clears a plugin's entry whose very version it has: that call is the cause."""
    state = attn.capture_state()
    fresh_worker()
    AttentionBackendEnum.FLASH_ATTN.clear_override()
    assert str(mismatch_of(state)).splitlines()[-1].startswith(LOCAL_FIX)


def test_a_missing_plugin_is_not_blamed_on_runtime_calls(acme, monkeypatch):
    """A plugin the worker lacks (here: plugins are off) is not the worker's own call."""
    state = attn.capture_state()
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    fresh_worker()
    assert "register_backend()" not in str(mismatch_of(state))


def test_a_worker_only_plugin_is_named_with_uninstall(plugin_module):
    """A plugin the worker has and the driver does not: the fix says uninstall it."""
    state = attn.capture_state()
    plugin_module.dist("attn-extra", "0.3", entry_points={"attn.backends": {"EXTRA": "x:Y"}})
    fresh_worker()
    error = mismatch_of(state)
    assert str(error) == (
        "The backends in this process differ from the driver's:\n"
        "  AttentionBackendEnum.EXTRA\n"
        "    driver: absent\n"
        "    worker: x.Y (plugin attn-extra 0.3)\n"
        "To fix it, install the same plugin versions on every node "
        "(here: pip uninstall attn-extra), or set the same ATTN_PLUGINS in every process."
    )
    assert error.differences == (("AttentionBackendEnum", "EXTRA"),)


def test_a_name_a_newer_release_adds_is_fixed_by_installing_the_drivers_version(plugin_module):
    """The worker's attn-new 2.0 adds Y: installing 1.0 fixes both names; no uninstall."""
    first = plugin_module.dist("attn-new", "1.0", entry_points={"attn.backends": {"X": "x:A"}})
    state = attn.capture_state()
    shutil.rmtree(first)
    plugin_module.dist("attn-new", "2.0", entry_points={"attn.backends": {"X": "x:A", "Y": "x:B"}})
    fresh_worker()
    assert str(mismatch_of(state)).splitlines()[-1] == (
        "To fix it, install the same plugin versions on every node "
        "(here: pip install 'attn-new==1.0'), or set the same ATTN_PLUGINS in every process."
    )


def test_a_preference_alone_is_not_offered_for_a_missing_plugin(plugin_module, monkeypatch):
    """Only ATTN_PREFER differs, but a plugin is missing: the fix leads with installing."""
    state = attn.capture_state()
    plugin_module.dist("attn-extra", "0.3", entry_points={"attn.backends": {"EXTRA": "x:Y"}})
    monkeypatch.setenv("ATTN_PREFER", "attn-extra")
    fresh_worker()
    assert str(mismatch_of(state)).endswith(
        "    worker: x.Y (plugin attn-extra 0.3)\n"
        "ATTN_PREFER is unset in the driver and 'attn-extra' here (to match: unset ATTN_PREFER)\n"
        "To fix it, install the same plugin versions on every node "
        "(here: pip uninstall attn-extra), and set the same ATTN_PREFER in every process."
    )


def test_a_preference_between_plugins_is_offered_first(plugin_module, monkeypatch):
    """Two installed claimants, another ATTN_PREFER: the fix leads with that control."""
    for name in ("attn-a", "attn-b"):
        plugin_module.dist(name, entry_points={"attn.backends": {"X": "plug.mod:Backend"}})
    with pytest.warns(attn.ConflictWarning):
        state = attn.capture_state()
    monkeypatch.setenv("ATTN_PREFER", "attn-b")
    fresh_worker()
    *_, driver, worker, control, fix = str(mismatch_of(state)).splitlines()
    assert (driver, worker) == (
        "    driver: plug.mod.Backend (plugin attn-a 1.0)",
        "    worker: plug.mod.Backend (plugin attn-b 1.0)",
    )
    assert control == (
        "ATTN_PREFER is unset in the driver and 'attn-b' here (to match: unset ATTN_PREFER)"
    )
    assert fix == (
        "To fix it, set the same ATTN_PREFER in every process, or install the same plugin "
        "versions on every node (here: pip uninstall attn-b)."
    )


def test_a_preference_is_not_offered_first_when_the_drivers_winner_is_missing(
    plugin_module, monkeypatch
):
    """attn-a wins in the driver and is not installed here: ATTN_PREFER cannot bring it back."""
    first = plugin_module.dist("attn-a", entry_points={"attn.backends": {"X": "plug.mod:Backend"}})
    plugin_module.dist("attn-b", entry_points={"attn.backends": {"X": "plug.mod:Backend"}})
    with pytest.warns(attn.ConflictWarning):
        state = attn.capture_state()
    shutil.rmtree(first)
    monkeypatch.setenv("ATTN_PREFER", "attn-b")
    fresh_worker()
    *_, driver, worker, control, fix = str(mismatch_of(state)).splitlines()
    assert (driver, worker) == (
        "    driver: plug.mod.Backend (plugin attn-a 1.0)",
        "    worker: plug.mod.Backend (plugin attn-b 1.0)",
    )
    assert control.startswith("ATTN_PREFER is unset in the driver and 'attn-b' here")
    assert fix == (
        "To fix it, install the same plugin versions on every node (here: pip install "
        "'attn-a==1.0'; pip uninstall attn-b), and set the same ATTN_PREFER in every process."
    )


@pytest.mark.parametrize(
    ("variable", "value"), [("ATTN_BLOCK_PLUGINS", "attn-a"), ("ATTN_PLUGINS", "attn-b")]
)
def test_a_control_and_a_missing_plugin_are_both_the_fix(
    plugin_module, monkeypatch, variable, value
):
    """The driver's control picks attn-b, which is not installed here: neither alone suffices."""
    plugin_module.dist("attn-a", entry_points={"attn.backends": {"X": "plug.mod:Backend"}})
    second = plugin_module.dist("attn-b", entry_points={"attn.backends": {"X": "plug.mod:Backend"}})
    monkeypatch.setenv(variable, value)
    state = attn.capture_state()
    shutil.rmtree(second)
    monkeypatch.delenv(variable)
    fresh_worker()
    assert str(mismatch_of(state)).splitlines()[-1] == (
        "To fix it, install the same plugin versions on every node (here: pip install "
        f"'attn-b==1.0'), and set the same {variable} in every process."
    )


def test_a_differing_block_list_is_named(acme, monkeypatch):
    """ATTN_BLOCK_PLUGINS set on one side only is named, and no other control is."""
    state = attn.capture_state()
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "attn-acme")
    fresh_worker()
    text = str(mismatch_of(state))
    assert text.endswith(
        "ATTN_BLOCK_PLUGINS is unset in the driver and 'attn-acme' here "
        "(to match: unset ATTN_BLOCK_PLUGINS)\n"
        "To fix it, set the same ATTN_BLOCK_PLUGINS in every process."
    )
    assert "ATTN_PLUGINS" not in text


def test_controls_that_mean_the_same_are_no_difference(plugin_module, monkeypatch):
    """Attn_Acme and attn-acme select one distribution: only the versions are named."""
    first = plugin_module.dist("attn-acme", "1.0", entry_points=ACME)
    monkeypatch.setenv("ATTN_PLUGINS", "Attn_Acme")
    state = attn.capture_state()
    shutil.rmtree(first)
    plugin_module.dist("attn-acme", "2.0", entry_points=ACME)
    monkeypatch.setenv("ATTN_PLUGINS", " attn-acme, ")
    fresh_worker()
    text = str(mismatch_of(state))
    assert "ATTN_PLUGINS is" not in text
    assert text.endswith(
        "To fix it, install the same plugin versions on every node "
        "(here: pip install 'attn-acme==1.0'), or set the same ATTN_PLUGINS in every process."
    )


def test_a_plugin_the_drivers_controls_leave_out_is_not_to_be_uninstalled(acme, monkeypatch):
    """The driver selects attn-acme, the worker attn-zed: setting ATTN_PLUGINS alone fixes it."""
    plugin_module = acme
    plugin_module.dist("attn-zed", "1.0", entry_points={"attn.backends": {"FLASH_ATTN": "z:Z"}})
    monkeypatch.setenv("ATTN_PLUGINS", "attn-acme")
    state = attn.capture_state()
    monkeypatch.setenv("ATTN_PLUGINS", "attn-zed")
    fresh_worker()
    assert str(mismatch_of(state)).splitlines()[-2:] == [
        (
            "ATTN_PLUGINS is 'attn-acme' in the driver and 'attn-zed' here "
            "(to match: export ATTN_PLUGINS=attn-acme)"
        ),
        "To fix it, set the same ATTN_PLUGINS in every process.",
    ]


def test_a_state_records_the_controls_its_table_was_discovered_with(acme, monkeypatch):
    """The driver's table left attn-acme out; the variable was unset after: it is the cause."""
    monkeypatch.setenv("ATTN_BLOCK_PLUGINS", "attn-acme")
    assert not AttentionBackendEnum["FLASH_ATTN"].is_overridden()  # the plugin is kept out
    monkeypatch.delenv("ATTN_BLOCK_PLUGINS")  # as an engine rewriting its environment
    state = attn.capture_state()
    assert ("ATTN_BLOCK_PLUGINS", "attn-acme") in captured(state, "AttentionBackendEnum").controls
    fresh_worker()
    assert str(mismatch_of(state)).splitlines()[-2:] == [
        (
            "ATTN_BLOCK_PLUGINS is 'attn-acme' in the driver and unset here "
            "(to match: export ATTN_BLOCK_PLUGINS=attn-acme)"
        ),
        "To fix it, set the same ATTN_BLOCK_PLUGINS in every process.",
    ]


def _block(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("ATTN_BLOCK_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("ATTN_BLOCK_PLUGINS", value)


@pytest.mark.parametrize(
    ("driver", "worker"), [("attn-acme", None), (None, "attn-acme"), ("attn-acme, odd name", None)]
)
def test_the_command_to_match_the_driver_makes_the_worker_agree(acme, monkeypatch, driver, worker):
    """The command after a differing control, run in sh as printed, gives the driver's value."""
    _block(monkeypatch, driver)
    state = attn.capture_state()
    _block(monkeypatch, worker)
    fresh_worker()
    line = str(mismatch_of(state)).splitlines()[-2]
    assert line.startswith("ATTN_BLOCK_PLUGINS is ")
    command = line.partition(" (to match: ")[2].removesuffix(")")
    env = {k: v for k, v in os.environ.items() if k != "ATTN_BLOCK_PLUGINS"}
    env |= {} if worker is None else {"ATTN_BLOCK_PLUGINS": worker}
    shell = f'{command}; printf %s "${{ATTN_BLOCK_PLUGINS-<unset>}}"'
    done = subprocess.run(["sh", "-c", shell], env=env, capture_output=True, text=True, check=True)
    assert done.stdout == (driver or "<unset>")
    _block(monkeypatch, None if done.stdout == "<unset>" else done.stdout)
    fresh_worker()
    attn.apply_state(state)  # no StateMismatchError: the worker now agrees


def test_state_mismatch_error_pickles():
    """The error crosses process boundaries (Pool.apply, Ray) with its attributes."""
    error = StateMismatchError("message", differences=(("R", "N"),), missing_registries=("T",))
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301
    assert str(copy) == "message"
    assert copy.differences == (("R", "N"),)
    assert copy.missing_registries == ("T",)


def test_check_false_skips_a_missing_registry():
    """check=False with a registry this process lacks applies the rest silently."""
    ghost = CapturedRegistry(
        registry="Ghost",
        module="no_such_host.registry",
        qualname="Ghost",
        group="ghost.backends",
        host="ghost",
        env_prefix="GHOST",
        fingerprint="0",
        backends=(),
    )
    attn.apply_state(WorkerState([ghost]), check=False)
    with pytest.raises(StateMismatchError, match="worker: absent: no module imported here"):
        attn.apply_state(WorkerState([ghost]))


ZEN = "Beautiful is better than ugly."


def _naming_this() -> dict[str, object]:
    """A saved state edited to name the module ``this`` (importing it prints the Zen of Python)."""
    data = attn.capture_state().to_json()
    registries = [r for r in data["registries"] if r["host"] == "attn"]  # type: ignore[index]
    registries[0]["module"] = "this"
    data["registries"] = registries
    return data


def test_a_state_never_imports_a_module_it_names(capsys):
    """A registry the state names in a module nothing imported is a mismatch; it is not imported."""
    sys.modules.pop("this", None)
    state = WorkerState.from_json(_naming_this())
    with pytest.raises(StateMismatchError) as caught:
        attn.apply_state(state)
    assert "this" not in sys.modules
    assert ZEN not in capsys.readouterr().out
    assert caught.value.missing_registries == ("AttentionBackendEnum",)
    assert (
        "  AttentionBackendEnum (this:AttentionBackendEnum, group 'attn.backends')\n"
        "    driver: declared\n"
        "    worker: absent: no module imported here declares it (a state never makes attn "
        "import one); import this before applying the state (with 'attn doctor --against "
        "FILE', add --registry this:AttentionBackendEnum)\n"
    ) in str(caught.value)


def test_a_pickled_state_brings_only_the_modules_of_declared_registries(tmp_path, python):
    """Unpickling imports what declared the driver's registries, never a module the data names."""
    state = WorkerState.from_json(_naming_this())
    (tmp_path / "state.pickle").write_bytes(pickle.dumps(state))
    code = (
        "import pickle, sys\n"
        f"state = pickle.loads(open({str(tmp_path / 'state.pickle')!r}, 'rb').read())\n"
        "print('this' in sys.modules, 'attn.backends' in sys.modules)\n"
    )
    done = python.run("-c", code)
    assert done.stdout.split() == ["False", "True"]  # MLAPrefillBackendEnum's module came along


def test_doctor_against_a_state_naming_a_module_imports_nothing(tmp_path, python):
    """``attn doctor --against`` uses the same check: exit 1 naming the registry, no Zen."""
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_naming_this()), encoding="utf-8")
    done = python.run("-m", "attn", "doctor", "--against", str(path), check=False)
    assert done.returncode == 1, done.stderr
    assert ZEN not in done.stdout + done.stderr
    assert "AttentionBackendEnum (this:AttentionBackendEnum" in done.stdout


def test_a_registry_declared_in_a_function_is_reported():
    """A worker cannot find a function-local registry: the message says to move it."""
    from attn.registry import enum  # noqa: PLC0415

    class Local(BackendEnum, group="local.backends", host="local"):
        ONE = "attn.registry:Backend"

    state = WorkerState([r for r in attn.capture_state().registries if r.registry == "Local"])
    # The worker: a process where nothing declared it.
    del enum._DECLARED[f"{Local.__module__}:{Local.__qualname__}"]
    error = mismatch_of(state)
    assert str(error) == (
        "The backends in this process differ from the driver's:\n"
        f"  Local ({Local.__module__}:test_a_registry_declared_in_a_function_is_reported."
        "<locals>.Local, group 'local.backends')\n"
        "    driver: declared\n"
        "    worker: absent: it was declared inside a function, so no other process can "
        "import it; declare registries at module level\n"
        "To fix it, install the same version of local on every node, and declare registries "
        "in modules that workers import."
    )
    assert error.missing_registries == ("Local",)


def test_registries_of_two_hosts_missing_name_both_hosts():
    """Two registries no worker can import, of two hosts: the fix names each host once."""
    from attn.registry import enum  # noqa: PLC0415

    class First(BackendEnum, group="first.backends", host="first"):
        ONE = "attn.registry:Backend"

    class Second(BackendEnum, group="second.backends", host="second"):
        ONE = "attn.registry:Backend"

    wanted = {"First", "Second"}
    state = WorkerState([r for r in attn.capture_state().registries if r.registry in wanted])
    for registry in (First, Second):
        del enum._DECLARED[f"{registry.__module__}:{registry.__qualname__}"]
    error = mismatch_of(state)
    assert "To fix it, install the same version of first, second on every node" in str(error)
    assert error.missing_registries == ("First", "Second")


def test_a_registry_declared_in_main_is_found_as_it_is():
    """A registry of the driver's script (``__main__``) is found in a forked child, not absent."""
    from attn.registry import enum  # noqa: PLC0415

    script = {"__name__": "__main__"}
    exec(  # noqa: S102 - a module named __main__, as a script run with python
        "from attn.registry import BackendEnum\n"
        "class Scripted(BackendEnum, group='scripted.backends', host='scripted'):\n"
        "    ONE = 'attn.registry:Backend'\n",
        script,
    )
    try:
        state = WorkerState([r for r in attn.capture_state().registries if r.module == "__main__"])
        assert [r.location for r in state.registries] == ["__main__:Scripted"]
        attn.apply_state(state)  # the same process, as a forked child sees it: no mismatch
    finally:
        del enum._DECLARED["__main__:Scripted"]


def test_from_json_reads_controls_as_variables_to_strings_or_null():
    """Captured controls map each variable to its value, or null where it was unset."""
    data = _saved()
    data["registries"][0]["controls"] = {"ATTN_PLUGINS": "attn-acme", "ATTN_PREFER": None}
    state = WorkerState.from_json(data)
    assert state.registries[0].controls == (("ATTN_PLUGINS", "attn-acme"), ("ATTN_PREFER", None))
    data["registries"][0]["controls"] = {"ATTN_PLUGINS": 1}
    with pytest.raises(
        ValueError, match=r"registries\[0\]\.controls must map variables to strings or null"
    ):
        WorkerState.from_json(data)


def test_ray_setup_hook_pickles_and_applies(plugin_module):
    """The hook has a name (Ray reads it), pickles, and applies the captured state."""
    attn.register_backend(AttentionBackendEnum.CUSTOM, "plug.mod:Other")
    hook = attn.ray_setup_hook()
    assert hook.__name__ == "attn_apply_state"
    copy = pickle.loads(pickle.dumps(hook))  # noqa: S301
    fresh_worker()
    copy()
    assert AttentionBackendEnum.CUSTOM.get_path() == "plug.mod.Other"


def test_worker_state_is_public_in_both_namespaces():
    """The worker API is in attn and in attn.registry, the same objects."""
    import attn.registry as core  # noqa: PLC0415

    for name in ("WorkerState", "StateMismatchError", "capture_state", "apply_state"):
        assert getattr(attn, name) is getattr(core, name)
    assert Path(attn.registry.workers.__file__).name == "workers.py"


HOSTY = '''\
import sys

from attn import AttentionBackend
from attn.registry import BackendEnum

print("hosty imported", file=sys.stderr)


class B(AttentionBackend):
    """A plugin backend whose module also declares a registry of its own."""


class HostyEnum(BackendEnum, group="hosty.backends", host="attn-hosty"):
    FAST = "hosty:B"
'''


def test_unpickling_a_state_imports_no_plugin_module_the_controls_keep_out(site, python, tmp_path):
    """A plugin's module declaring a registry, blocked in the worker: not imported, reported.

    A host's module that a blocked plugin's entry point names (an alias of a host's class) is
    the host's code: it is imported, and its registry matches.
    """
    site.dist("attn-hosty", "1.0", entry_points={"attn.backends": {"HOSTY": "hosty:B"}})
    site.module("hosty", HOSTY)
    site.dist("attn-alias", "1.0", entry_points={"attn.backends": {"ALIAS": "hostx:B"}})
    site.module("hostx", HOSTY.replace("hosty", "hostx").replace("Hosty", "Hostx"))
    state = tmp_path / "state.pickle"
    driver = "import attn, pickle\nattn.AttentionBackendEnum['HOSTY'].get_class()\nimport hostx\n"
    python.run(
        "-c", f"{driver}open({str(state)!r}, 'wb').write(pickle.dumps(attn.capture_state()))"
    )
    worker = (
        "import os, pickle, sys\n"
        "os.environ[sys.argv[1]] = sys.argv[2]\n"
        f"state = pickle.loads(open({str(state)!r}, 'rb').read())\n"
        "print('hosty' in sys.modules)\n"
        "import attn\nattn.apply_state(state)\n"
    )
    controls = (
        ("ATTN_BLOCK_PLUGINS", "attn-hosty,attn-alias"),
        ("ATTN_PLUGINS", "x"),
        ("ATTN_DISABLE_PLUGINS", "1"),
    )
    for variable, value in controls:
        done = python.run("-c", worker, variable, value, check=False)
        assert (done.returncode, done.stdout) == (1, "False\n"), done.stderr
        assert "hosty imported" not in done.stderr
        assert (
            "  HostyEnum (hosty:HostyEnum, group 'hosty.backends')\n    driver: declared\n"
            "    worker: absent: its module is code of attn-hosty, kept out here\n"
        ) in done.stderr
        assert done.stderr.startswith("hostx imported\n")
        assert "HostxEnum" not in done.stderr
    done = python.run("-c", worker, "ATTN_PREFER", "attn-hosty")  # in effect: imported, matches
    assert (done.stdout, done.stderr) == ("True\n", "hosty imported\nhostx imported\n")


def test_a_registry_kept_out_by_the_controls_gets_the_controls_fix_alone(site, python, tmp_path):
    """attn-hosty is installed alike here, only blocked: no 'install the same version' of it."""
    site.dist("attn-hosty", "1.0", entry_points={"attn.backends": {"HOSTY": "hosty:B"}})
    site.module("hosty", HOSTY)
    state = tmp_path / "state.pickle"
    driver = "import attn, pickle\nattn.AttentionBackendEnum['HOSTY'].get_class()\n"
    python.run(
        "-c", f"{driver}open({str(state)!r}, 'wb').write(pickle.dumps(attn.capture_state()))"
    )
    worker = (
        "import os, pickle\nos.environ['ATTN_BLOCK_PLUGINS'] = 'attn-hosty'\n"
        f"state = pickle.loads(open({str(state)!r}, 'rb').read())\n"
        "import attn\nattn.apply_state(state)\n"
    )
    done = python.run("-c", worker, check=False)
    assert done.returncode == 1
    assert "    worker: absent: its module is code of attn-hosty, kept out here\n" in done.stderr
    assert done.stderr.endswith("To fix it, set the same ATTN_BLOCK_PLUGINS in every process.\n")
