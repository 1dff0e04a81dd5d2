"""Ray workers resolve like the driver: state passed to tasks and actors, the setup hook.

One local cluster (``ray.init(num_cpus=2)``, loopback only) serves the whole
module: a driver script starts it, runs every scenario, and starts a second
driver that connects to the same cluster as another job with
``runtime_env={"worker_process_setup_hook": attn.ray_setup_hook()}``. The
tests read what the drivers printed. Needs the ``ray`` extra
(``pip install 'attn[ray]'``). The drivers run with the interpreter the suite
was started with (where ray is installed): the module-scoped fixture is set up
before the function-scoped isolation replaces ``sys.executable``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(
        find_spec("ray") is None, reason="ray is not installed: pip install 'attn[ray]'"
    ),
]

PLUGIN = '''\
from attn import AttentionBackend, MLAPrefillBackend


class Backend(AttentionBackend):
    """attn-acme's FLASH_ATTN."""


class Other(AttentionBackend):
    """attn-other's OTHER."""


class Prefill(MLAPrefillBackend):
    """Registered at runtime by the drivers."""
'''

DISTRIBUTIONS = {
    "attn-acme": "[attn.backends]\nFLASH_ATTN = raytest.plug:Backend\n",
    "attn-other": "[attn.backends]\nOTHER = raytest.plug:Other\n",
}

DRIVER = '''\
"""Drives a local Ray cluster: tasks, an actor, a differing worker, then a hooked job."""

import json
import os
import subprocess
import sys
import time

import ray

import attn
from attn import AttentionBackendEnum as A, MLAPrefillBackendEnum as M
from attn.registry import build_report
from attn.registry.enum import declared_registries

RETRIES = {"max_retries": 0}


def resolved():
    """Every name of every registry: origin, path, distribution, version."""
    # A fresh Ray worker has imported only what the task needs: name attn's registries.
    registries = dict.fromkeys((A, M, *declared_registries()))
    return {
        registry.__name__: {
            row.name: [row.origin, row.path, row.distribution, row.distribution_version]
            for row in build_report(registry).backends
        }
        for registry in registries
    }


@ray.remote(**RETRIES)
def apply_and_resolve(state):
    attn.apply_state(state)
    return resolved()


@ray.remote(**RETRIES)
def plain():
    return resolved()


@ray.remote
class Resolver:
    def __init__(self, state):
        attn.apply_state(state)

    def resolved(self):
        return resolved()


def failure(ref):
    try:
        ray.get(ref, timeout=120)
    except attn.StateMismatchError as exc:
        return {"type": type(exc).__name__, "cause": str(exc.cause)}
    except ray.exceptions.RayError as exc:
        return {"type": type(exc).__name__, "cause": None}
    return None


def result(stdout):
    """The JSON after the marker (Ray writes to stdout too)."""
    return json.loads(stdout.rpartition("attn-result:")[2])


def first(address):
    attn.register_mla_prefill_backend(M.CUSTOM, "raytest.plug:Prefill")
    state = attn.capture_state()
    started = time.monotonic()
    context = ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=address
    )
    out = {"init_seconds": time.monotonic() - started, "driver": resolved()}
    out["plain"] = ray.get(plain.remote(), timeout=120)
    out["tasks"] = ray.get([apply_and_resolve.remote(state) for _ in range(2)], timeout=120)
    actor = Resolver.remote(state)
    out["actor"] = ray.get(actor.resolved.remote(), timeout=120)
    differing = {"env_vars": {"ATTN_PLUGINS": "attn-other"}}
    out["mismatch"] = failure(apply_and_resolve.options(runtime_env=differing).remote(state))
    hooked = subprocess.run(
        [sys.executable, __file__, "hooked", context.address_info["address"]],
        capture_output=True, text=True, timeout=300, check=False,
    )
    out["hooked"] = {"returncode": hooked.returncode, "output": hooked.stderr}
    if hooked.returncode == 0:
        out["hooked"].update(result(hooked.stdout))
    ray.shutdown()
    return out


class Recorder:
    """sys.stdout that also keeps what is written (Ray reports dead workers there)."""

    def __init__(self, stream):
        self.stream = stream
        self.text = []

    def write(self, text):
        self.text.append(text)
        return self.stream.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def second(address):
    attn.register_mla_prefill_backend(M.CUSTOM, "raytest.plug:Prefill")
    # Ray prints a worker's start-up failure from a thread, after ray.get has
    # raised: record stdout and wait (60 s at most) for the report.
    recorder = sys.stdout = Recorder(sys.stdout)
    ray.init(
        address=address,
        log_to_driver=False,
        runtime_env={"worker_process_setup_hook": attn.ray_setup_hook()},
    )
    out = {"driver": resolved(), "plain": ray.get(plain.remote(), timeout=120)}
    differing = {"env_vars": {"ATTN_PLUGINS": "attn-other"}}
    out["mismatch"] = failure(plain.options(runtime_env=differing).remote())
    deadline = time.monotonic() + 60
    while "attn.StateMismatchError" not in "".join(recorder.text):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    out["reported"] = "".join(recorder.text)
    ray.shutdown()
    return out


if __name__ == "__main__":
    role, address = sys.argv[1:3]
    print("attn-result:" + json.dumps(first(address) if role == "first" else second(address)))
'''


def _site(root: Path) -> None:
    """The plugin module raytest.plug and the distributions attn-acme and attn-other."""
    package = root / "raytest"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "plug.py").write_text(PLUGIN, encoding="utf-8")
    for name, entry_points in DISTRIBUTIONS.items():
        info = root / f"{name.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        info.joinpath("METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\nRequires-Dist: attn>=0.1\n",
            encoding="utf-8",
        )
        info.joinpath("entry_points.txt").write_text(entry_points, encoding="utf-8")


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory):
    """Run the drivers once (one cluster start) and return what they printed."""
    root = tmp_path_factory.mktemp("ray-site")
    _site(root)
    script = root / "driver.py"
    script.write_text(DRIVER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
    env.update(
        # Only this module's plugins take part, whatever else is installed where ray is.
        ATTN_PLUGINS="attn-acme,attn-other",
        PYTHONPATH=str(root),
        XDG_CACHE_HOME=str(root / "cache"),
        # Loopback addresses only, and no usage reports: the cluster stays on this machine.
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
        RAY_USAGE_STATS_ENABLED="0",
        # Ray writes its cluster token under ~/.ray: a home of the test's own.
        HOME=str(root / "home"),
    )
    # A short folder: Ray's socket paths under it must fit in 107 bytes.
    temp = tempfile.mkdtemp(prefix="attn-ray-")
    try:
        done = subprocess.run(
            [sys.executable, str(script), "first", temp],
            capture_output=True,
            text=True,
            env=env,
            cwd=root,
            timeout=480,
            check=False,
        )
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(done.stdout.rpartition("attn-result:")[2])


DRIVER_ROWS = {
    "FLASH_ATTN": ["plugin", "raytest.plug.Backend", "attn-acme", "1.0"],
    "OTHER": ["plugin", "raytest.plug.Other", "attn-other", "1.0"],
}
MESSAGE = (
    "The backends in this process differ from the driver's:\n"
    "  AttentionBackendEnum.FLASH_ATTN\n"
    "    driver: raytest.plug.Backend (plugin attn-acme 1.0)\n"
    "    worker: attn.backends.attention.FlashAttentionBackend (built-in)\n"
    "ATTN_PLUGINS is 'attn-acme,attn-other' in the driver and 'attn-other' here "
    "(to match: export ATTN_PLUGINS=attn-acme,attn-other)\n"
    "To fix it, set the same ATTN_PLUGINS in every process."
)


def test_the_driver_resolves_the_plugins_and_its_registration(ray_run):
    """The driver's own table: both plugins and the runtime registration."""
    driver = ray_run["driver"]
    assert {n: driver["AttentionBackendEnum"][n] for n in DRIVER_ROWS} == DRIVER_ROWS
    assert driver["MLAPrefillBackendEnum"]["CUSTOM"] == [
        "runtime",
        "raytest.plug.Prefill",
        None,
        None,
    ]


def test_a_plain_task_lacks_the_driver_registration(ray_run):
    """Without the state, a Ray worker has the plugins but not the driver's registration."""
    assert ray_run["plain"]["MLAPrefillBackendEnum"]["CUSTOM"] == ["builtin", None, None, None]
    assert ray_run["plain"]["AttentionBackendEnum"] == ray_run["driver"]["AttentionBackendEnum"]


def test_tasks_given_the_state_resolve_like_the_driver(ray_run):
    """Remote tasks that apply capture_state() resolve every name like the driver."""
    assert ray_run["tasks"] == [ray_run["driver"], ray_run["driver"]]


def test_an_actor_given_the_state_resolves_like_the_driver(ray_run):
    """An actor that applies the state in __init__ resolves every name like the driver."""
    assert ray_run["actor"] == ray_run["driver"]


def test_a_worker_with_other_env_vars_raises_state_mismatch(ray_run):
    """runtime_env env_vars that leave a plugin out: StateMismatchError naming the backend."""
    assert ray_run["mismatch"] == {
        "type": "RayTaskError(StateMismatchError)",
        "cause": MESSAGE,
    }


def test_the_setup_hook_applies_the_state_in_every_worker(ray_run):
    """A job with worker_process_setup_hook=attn.ray_setup_hook(): plain tasks match."""
    hooked = ray_run["hooked"]
    assert hooked["returncode"] == 0, hooked["output"][-5000:]
    assert hooked["plain"] == hooked["driver"]
    assert hooked["driver"] == ray_run["driver"]


def test_the_setup_hook_fails_a_differing_worker_with_the_message(ray_run):
    """A hooked worker with other env vars dies at start-up; Ray reports the message."""
    hooked = ray_run["hooked"]
    assert hooked["mismatch"] == {"type": "WorkerCrashedError", "cause": None}
    assert f"attn.StateMismatchError: {MESSAGE}\n" in hooked["reported"]
