"""Workers choose like the driver: a state records the driver's selections, apply_state checks.

A toy host (``selhost``) has FAST, whose kernel package ``selhost-kernel``
must be installed (looked for, never imported), and SLOW, which refuses
``head_size=256``; a plugin adds PLUS. The process tests run a driver script
that selects, captures, then makes the environment of a spawned worker
differ (it edits its own ``sys.path``, which spawned children start with).
"""

from __future__ import annotations

import dataclasses
import json
import linecache
import os
import pickle
import subprocess
import sys
import threading
import time

import pytest

import attn
from attn.registry import _cache, selection
from attn.registry.enum import state_of
from attn.registry.selection import Recorded
from attn.registry.workers import CapturedRegistry, WorkerState
from racy import settle_attn_sources

HOST = '''\
from attn.registry import Backend, BackendEnum


class SelBackend(Backend):
    """The toy host's interface."""


class Fast(SelBackend):
    requires = ("selhost-kernel",)


class Slow(SelBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        return ["too slow for head_size 256"] if settings.get("head_size") == 256 else []


class SelEnum(BackendEnum, group="selhost.backends", host="selhost", interface=SelBackend):
    FAST = "selhost:Fast"
    SLOW = "selhost:Slow"
'''

PLUGIN = """\
from selhost import SelBackend


class Plus(SelBackend):
    pass
"""

#: Imported by the kernel check it would fail loudly: the check only looks for it.
KERNEL = "raise SystemExit('selhost_kernel was imported')\n"

DRIVER = '''\
"""Select, capture, leave sites out of a spawned worker's path, apply the state there."""

import json
import multiprocessing as mp
import os
import sys

import attn


def work(state, settings):
    from selhost import SelEnum

    try:
        attn.apply_state(state)
    except attn.StateMismatchError as exc:
        return {"message": str(exc), "selections": exc.selections, "differences": exc.differences}
    return {"chosen": SelEnum.select(**settings).name}


def main():
    plan = json.loads(sys.argv[1])
    for variable in plan["driver_without"]:
        sys.path.remove(os.environ[variable])
    from selhost import SelEnum

    driver = SelEnum.select(**plan["settings"]).name
    state = attn.capture_state()
    for variable in plan["worker_without"]:
        sys.path.remove(os.environ[variable])
    with mp.get_context("spawn").Pool(1) as pool:
        worker = pool.apply_async(work, (state, plan["settings"])).get(60)
    print(json.dumps({"driver": driver, "worker": worker}))


if __name__ == "__main__":
    main()
'''


@pytest.fixture
def world(sites):
    """The toy host's module, its kernel package and a plugin, each on a site of its own."""
    made = {label: sites.new(label) for label in ("host", "kernel", "plugin")}
    modules = [
        ("host", "selhost", HOST),
        ("host", "seldriver", DRIVER),
        ("kernel", "selhost_kernel", KERNEL),
        ("plugin", "selplug", PLUGIN),
    ]
    for label, module, source in modules:
        made[label].module(module, source)
    made["host"].dist("selhost", "1.0", requires=())
    plus = {"selhost.backends": {"PLUS": "selplug:Plus"}}
    made["plugin"].dist("selhost-plus", "2.0", entry_points=plus, requires=("selhost",))
    return made


@pytest.fixture
def registry(world):
    """The toy host's registry, imported in this process; forgotten afterwards."""
    sys.modules.pop("selhost", None)
    import selhost  # noqa: PLC0415 - written by the world fixture

    yield selhost.SelEnum
    state_of(selhost.SelEnum).reset()


def drive(python, world, settings, driver_without=(), worker_without=()):
    """Run the driver script; its JSON: the driver's choice and the worker's outcome.

    ``*_without`` name the sites (``KERNEL_SITE``, ``PLUGIN_SITE``) left out.
    """
    plan = {
        "settings": settings,
        "driver_without": list(driver_without),
        "worker_without": list(worker_without),
    }
    env = {
        **python.env(),
        "KERNEL_SITE": str(world["kernel"].root),
        "PLUGIN_SITE": str(world["plugin"].root),
    }
    done = subprocess.run(
        [str(python.runtime.python), "-m", "seldriver", json.dumps(plan)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
        cwd=python.cwd,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_spawned_worker_with_the_same_environment_agrees(python, world):
    """Same packages in the worker: apply_state passes and the worker chooses as the driver."""
    out = drive(python, world, {"head_size": 128})
    assert out == {"driver": "FAST", "worker": {"chosen": "FAST"}}


def test_a_worker_missing_the_kernel_package_names_both_choices(python, world):
    """The tables agree, the choice does not: the kernel's absence is the worker's reason."""
    out = drive(python, world, {"head_size": 128}, worker_without=["KERNEL_SITE"])
    assert out["driver"] == "FAST"
    worker = out["worker"]
    assert worker["differences"] == []
    assert worker["selections"] == ["SelEnum"]
    assert worker["message"] == (
        "The selections in this process differ from the driver's:\n"
        "  SelEnum.select(head_size=128)\n"
        "    driver chose FAST (selhost.Fast):\n"
        "      FAST (builtin): chosen\n"
        "    worker chose SLOW (selhost.Slow):\n"
        "      FAST (builtin): rejected: needs selhost-kernel, not installed\n"
        "      SLOW (builtin): chosen\n"
        "To fix it, install the same kernel packages on every node (a rejection above names "
        "what is missing), or pass settings that hold on every node."
    )


def test_a_worker_missing_the_chosen_plugin_names_both_choices_and_reasons(python, world):
    """The driver chose a plugin's backend; without the plugin the worker has no valid one."""
    out = drive(python, world, {"head_size": 256}, ["KERNEL_SITE"], worker_without=["PLUGIN_SITE"])
    assert out["driver"] == "PLUS"
    worker = out["worker"]
    assert worker["differences"] == [["SelEnum", "PLUS"]]
    assert worker["selections"] == ["SelEnum"]
    message = worker["message"]
    assert "    driver: selplug.Plus (plugin selhost-plus 2.0)\n    worker: absent\n" in message
    assert (
        "  SelEnum.select(head_size=256)\n"
        "    driver chose PLUS (selplug.Plus):\n"
        "      FAST (builtin): rejected: needs selhost-kernel, not installed\n"
        "      SLOW (builtin): rejected: too slow for head_size 256\n"
        "      PLUS (plugin selhost-plus 2.0): chosen\n"
        "    worker chose none (SelectionError):\n"
        "      FAST (builtin): rejected: needs selhost-kernel, not installed\n"
        "      SLOW (builtin): rejected: too slow for head_size 256\n"
    ) in message
    # The missing plugin explains the choice: no kernel package is named as the fix.
    assert message.endswith(
        "To fix it, install the same plugin versions on every node (here: pip install "
        "'selhost-plus==2.0'), or set the same SELHOST_PLUGINS in every process."
    )


def selections(state: WorkerState, name: str = "SelEnum") -> tuple[Recorded, ...]:
    (captured,) = [r for r in state.registries if r.registry == name]
    return captured.selections


def test_capture_records_each_selection_as_data(registry):
    """Settings, the explicit name, the choice, its path and the rows tried, as text."""
    registry.select(head_size=128)
    registry.select("SLOW", dtype="bfloat16", capability=[9, 0])
    assert selections(attn.capture_state()) == (
        Recorded(
            (("head_size", 128),),
            "FAST",
            "selhost.Fast",
            None,
            ("FAST (builtin): chosen",),
        ),
        Recorded(
            (("capability", (9, 0)), ("dtype", "bfloat16")),
            "SLOW",
            "selhost.Slow",
            "SLOW",
            ("SLOW (builtin): chosen",),
        ),
    )


def test_capture_leaves_out_rejections_and_settings_that_are_not_data(registry):
    """A state holds plain data: a selection with an object among its settings is not in it."""
    registry.select(head_size=128, flag=_Flag.ON)
    with pytest.raises(attn.SelectionError):
        registry.select("SLOW", head_size=256)
    assert selections(attn.capture_state()) == ()


class _Flag(str):
    """A setting's value that is text but not a str: it would import this module to unpickle."""

    __slots__ = ()

    ON: _Flag


_Flag.ON = _Flag("on")


def test_a_state_with_selections_pickles_and_round_trips_through_json(registry):
    """The selections survive pickling and to_json()/from_json(), tuples included."""
    registry.select(head_size=128, capability=(9, 0), use_mla=False, scale=0.5, name=None)
    state = attn.capture_state()
    assert pickle.loads(pickle.dumps(state)) == state  # noqa: S301 - our own bytes
    data = json.loads(json.dumps(state.to_json()))
    (entry,) = next(r for r in data["registries"] if r["registry"] == "SelEnum")["selections"]
    assert entry["settings"] == {
        "capability": [9, 0],
        "head_size": 128,
        "name": None,
        "scale": 0.5,
        "use_mla": False,
    }
    assert WorkerState.from_json(data) == state


def test_a_state_saved_without_selections_reads_as_none(registry):
    """States written before selections were recorded still read, with no selections."""
    registry.select(head_size=128)
    data = attn.capture_state().to_json()
    for item in data["registries"]:
        del item["selections"]
    assert selections(WorkerState.from_json(data)) == ()


def test_a_state_saved_before_the_variable_was_recorded_reads(registry):
    """A selection without ``variable`` (written by an earlier attn) reads as made by priority."""
    registry.select(head_size=128)
    state = attn.capture_state()
    data = state.to_json()
    (entry,) = next(r for r in data["registries"] if r["registry"] == "SelEnum")["selections"]
    assert entry.pop("variable") is None
    assert WorkerState.from_json(data) == state
    entry["variable"] = 3
    with pytest.raises(ValueError, match=r"selections\[0\]\.variable is 3, expected a string"):
        WorkerState.from_json(data)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"settings": []}, "registries[0].selections[0].settings is list, expected an object"),
        (
            {"settings": {"x": {"a": 1}}},
            (
                "registries[0].selections[0].settings.x is {'a': 1}, expected text, a number, "
                "a bool, null or an array"
            ),
        ),
        ({"tried": [1]}, "registries[0].selections[0].tried must hold lines (strings)"),
        ({"name": 3}, "registries[0].selections[0].name is 3, expected a string"),
        ({"path": "not a path"}, "registries[0].selections[0].path: "),
    ],
)
def test_from_json_checks_the_selections(registry, edit, message):
    """A hand-edited selection is refused with where it is wrong."""
    registry.select(head_size=128)
    data = attn.capture_state().to_json()
    data["registries"] = [r for r in data["registries"] if r["registry"] == "SelEnum"]
    data["registries"][0]["selections"][0].update(edit)
    with pytest.raises(ValueError, match="not a saved attn state: ") as caught:
        WorkerState.from_json(data)
    assert message in str(caught.value)


def driver_chose(state: WorkerState, **changes: object) -> WorkerState:
    """*state* with its one SelEnum selection edited as if the driver had chosen otherwise."""

    def edited(captured: CapturedRegistry) -> CapturedRegistry:
        if captured.registry != "SelEnum":
            return captured
        (made,) = captured.selections
        return dataclasses.replace(captured, selections=(dataclasses.replace(made, **changes),))

    return WorkerState(tuple(map(edited, state.registries)))


def test_apply_state_in_process_agrees_and_selects_again(registry):
    """The same process agrees with its own state; the selection is made again, from the cache."""
    registry.select(head_size=128)
    state = attn.capture_state()
    registry.refresh()
    attn.apply_state(state)
    assert [s.name for s in selection.recorded(registry)] == ["FAST"]


def test_a_differing_choice_names_both_sides(registry):
    """The driver's rows are shown as captured, the worker's as it chose here."""
    registry.select(head_size=128)
    state = driver_chose(
        attn.capture_state(),
        name="SLOW",
        path="selhost.Slow",
        tried=(
            "FAST (builtin): rejected: needs selhost-kernel, not installed",
            "SLOW (builtin): chosen",
        ),
    )
    with pytest.raises(attn.StateMismatchError) as caught:
        attn.apply_state(state)
    assert caught.value.selections == ("SelEnum",)
    assert caught.value.differences == ()
    assert str(caught.value).splitlines()[:8] == [
        "The selections in this process differ from the driver's:",
        "  SelEnum.select(head_size=128)",
        "    driver chose SLOW (selhost.Slow):",
        "      FAST (builtin): rejected: needs selhost-kernel, not installed",
        "      SLOW (builtin): chosen",
        "    worker chose FAST (selhost.Fast):",
        "      FAST (builtin): chosen",
        (
            "To fix it, install the same kernel packages on every node (a rejection above names "
            "what is missing), or pass settings that hold on every node."
        ),
    ]


def test_an_explicit_choice_unknown_here_is_a_difference(registry):
    """The driver chose a name the worker does not have: the unknown-name error is shown."""
    registry.select(head_size=128)
    state = driver_chose(attn.capture_state(), name="GONE", path="gone.Gone", explicit="GONE")
    with pytest.raises(attn.StateMismatchError) as caught:
        attn.apply_state(state)
    lines = str(caught.value).splitlines()
    assert lines[1] == "  SelEnum.select('GONE', head_size=128)"
    assert lines[4].startswith("    worker chose none (UnknownBackendError): ")


def test_a_choice_made_by_the_workers_variable_says_so(registry, monkeypatch):
    """The driver chose by priority; the worker's SELHOST_SELHOST_BACKEND chose: it is named."""
    registry.select(head_size=128)
    state = attn.capture_state()
    monkeypatch.setenv("SELHOST_SELHOST_BACKEND", " SLOW ")
    with pytest.raises(attn.StateMismatchError) as caught:
        attn.apply_state(state)
    assert str(caught.value).splitlines()[4:] == [
        "    worker chose SLOW (selhost.Slow):",
        "      SLOW (builtin): chosen",
        (
            "    the worker's SELHOST_SELHOST_BACKEND='SLOW' chose it: set the same on every node "
            "(to match: unset SELHOST_SELHOST_BACKEND)"
        ),
        "To fix it, set each variable named above alike on every node.",
    ]


def test_a_choice_made_by_the_drivers_variable_is_made_again_as_the_worker_would(
    registry, monkeypatch
):
    """The worker's code passes no name either: its own variable (or the priorities) decides."""
    monkeypatch.setenv("SELHOST_SELHOST_BACKEND", "SLOW")
    registry.select(head_size=128)
    state = attn.capture_state()
    recorded = ((("head_size", 128),), "SLOW", "selhost.Slow", None, ("SLOW (builtin): chosen",))
    assert selections(state) == (Recorded(*recorded, variable="SLOW"),)
    attn.apply_state(state)  # the same variable here: the same choice
    driver = [
        "  SelEnum.select(head_size=128)",
        "    driver chose SLOW (selhost.Slow):",
        "      SLOW (builtin): chosen",
    ]
    monkeypatch.delenv("SELHOST_SELHOST_BACKEND")  # a node that does not set it
    with pytest.raises(attn.StateMismatchError) as caught:
        attn.apply_state(state)
    assert str(caught.value).splitlines()[1:7] == [
        *driver,
        "    worker chose FAST (selhost.Fast):",
        "      FAST (builtin): chosen",
        (
            "    the driver's SELHOST_SELHOST_BACKEND='SLOW' chose it: set the same on every node "
            "(to match: export SELHOST_SELHOST_BACKEND=SLOW)"
        ),
    ]
    monkeypatch.setenv("SELHOST_SELHOST_BACKEND", "FAST")
    with pytest.raises(attn.StateMismatchError) as caught:
        attn.apply_state(state)
    assert str(caught.value).splitlines()[6:] == [
        (
            "    the driver's SELHOST_SELHOST_BACKEND='SLOW' and the worker's "
            "SELHOST_SELHOST_BACKEND='FAST' chose it: set the same on every node "
            "(to match: export SELHOST_SELHOST_BACKEND=SLOW)"
        ),
        "To fix it, set each variable named above alike on every node.",  # no kernel is missing
    ]


def test_the_same_variable_on_both_sides_is_not_named_as_the_cause(registry, monkeypatch):
    """The worker's SELHOST_SELHOST_BACKEND chose as the driver's did; its node rejects it."""
    registry.select(head_size=128)
    state = driver_chose(
        attn.capture_state(),
        settings=(("head_size", 256),),
        name="SLOW",
        path="selhost.Slow",
        variable="SLOW",
    )
    monkeypatch.setenv("SELHOST_SELHOST_BACKEND", "SLOW")
    with pytest.raises(attn.StateMismatchError) as caught:
        attn.apply_state(state)
    lines = str(caught.value).splitlines()
    assert lines[4:6] == [
        "    worker chose none (SelectionError):",
        "      SLOW (builtin): rejected: too slow for head_size 256",
    ]
    assert not [line for line in lines if "chose it" in line]
    assert lines[-1].startswith("To fix it, install the same kernel packages on every node")


def test_check_false_selects_nothing(registry):
    """Without the check, nothing is chosen again (no candidate is imported)."""
    registry.select(head_size=128)
    state = driver_chose(attn.capture_state(), name="SLOW", path="selhost.Slow")
    registry.refresh()
    attn.apply_state(state, check=False)
    assert selection.recorded(registry) == ()


def test_selections_made_on_a_discovery_from_the_cache_are_captured(world, registry, runtime):
    """A warm process (discovery read from the cache file) records its selections too."""
    when = time.time() - 3600  # installed a while ago: the cache file is trusted
    for root in [*(site.root for site in world.values()), runtime.site]:
        for item in [root, *root.rglob("*")]:
            os.utime(item, (when, when))
    settle_attn_sources()
    state_of(registry).ready()  # scans, and writes the file
    before = time.time_ns()
    state_of(registry).reset()  # as a new process: the next access reads the file
    registry.select(head_size=128)
    assert _cache._SHARED["selhost"][1].started < before  # read from the file: an earlier scan
    assert [s.name for s in selections(attn.capture_state())] == ["FAST"]


def test_selections_made_before_the_table_changed_are_not_captured(registry):
    """A state records the selections made with the table it describes."""
    registry.select(head_size=128)
    registry.refresh()
    assert selections(attn.capture_state()) == ()
    registry.select(head_size=64)
    assert [s.settings for s in selections(attn.capture_state())] == [(("head_size", 64),)]


def test_a_table_change_racing_a_capture_does_not_mix_two_tables(registry, monkeypatch):
    """A refresh and a selection in another thread wait until the capture has read both."""
    registry.select(head_size=128)
    token, other = (
        selection._token,
        threading.Thread(  # the other thread, mid-capture
            target=lambda: (registry.refresh(), registry.select(head_size=64))
        ),
    )

    def racing(of: object, *args: object) -> object:
        if of is registry and other.ident is None:
            other.start()
            other.join(0.5)  # done at once unless the capture holds attn's lock
        return token(of, *args)

    monkeypatch.setattr(selection, "_token", racing)
    captured = selections(attn.capture_state())
    other.join(30)
    assert [s.settings for s in captured] == [(("head_size", 128),)]


def test_capturing_and_applying_without_selections_import_no_selection_module(python):
    """A driver that never selected, and its workers, do not pay for the selection module."""
    code = (
        "import pickle, sys\n"
        "import attn\n"
        "state = pickle.loads(pickle.dumps(attn.capture_state()))\n"
        "attn.apply_state(WorkerState.from_json(state.to_json()))\n"
        "attn.apply_state(state)\n"
        "print('attn.registry.selection' in sys.modules)\n"
        "try:\n"
        "    attn.AttentionBackendEnum.select(device='cpu')\n"
        "except attn.SelectionError:\n"
        "    pass  # no torch here\n"
        "print('attn.registry.selection' in sys.modules)\n"
    ).replace("WorkerState", "attn.WorkerState")
    assert python.run("-c", code).stdout.split() == ["False", "True"]


def test_a_selection_that_waited_for_the_lock_keeps_the_others_recorded(registry):
    """A select() paused before it takes the lock, while the table changes: none is dropped."""
    registry.select(head_size=1)
    paused, go = threading.Event(), threading.Event()

    def tracer(frame, event, _arg):  # pause select() at its first `with _fork.LOCK:`
        if event != "call" or frame.f_code is not selection.select.__code__:
            return None

        def line(f, e, _a):
            source = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
            if e == "line" and source.startswith("with _fork.LOCK:") and not paused.is_set():
                paused.set()
                go.wait(30)
            return line

        return line

    def late() -> None:
        sys.settrace(tracer)
        registry.select(head_size=2)

    thread = threading.Thread(target=late)
    thread.start()
    assert paused.wait(30)
    attn.registry.register(registry.SLOW, "selhost:Slow")  # the table changes meanwhile
    registry.select(head_size=3)  # made with the current table
    go.set()
    thread.join(30)
    recorded = {dict(s.settings)["head_size"] for s in selections(attn.capture_state())}
    assert recorded == {2, 3}


def test_a_pickled_state_is_its_json(registry):
    """A pickle holds the state's JSON: an attn whose records gained a field reads the default."""
    registry.select(head_size=128)
    state = attn.capture_state()
    assert pickle.loads(pickle.dumps(state)) == state  # noqa: S301 - its own bytes
    function, (registries, _) = state.__reduce__()
    assert registries == state.to_json()["registries"]  # plain data, no record classes
    for captured in registries:
        for row in captured["selections"]:
            del row["variable"]  # as an attn from before that field pickled it
    assert selections(function(registries, ()))[0].variable is None
