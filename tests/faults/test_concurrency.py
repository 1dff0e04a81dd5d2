"""Threads and forks against the registries: nothing hangs, every table is whole.

Engines fork workers while other threads may be discovering, refreshing or
registering. A child forked at such a moment inherits the lock held by a
thread that does not exist in the child; these tests fork at exactly those
moments (a meta-path finder holds discovery open) and require the child to
look up, register and refresh within a time limit.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import attn
from attn import _fork
from attn.registry import build_report
from attn.registry.enum import state_of
from racy import settle_attn_sources

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

GROUP = "attn.backends"
CHILD_TIMEOUT = 20.0
REGISTRIES = (attn.AttentionBackendEnum, attn.MLAPrefillBackendEnum)
FLASH_DEFAULT = attn.AttentionBackendEnum._attn_defaults["FLASH_ATTN"].dotted


class HoldingFinder:
    """A meta-path finder whose ``find_distributions`` holds the first caller until released.

    Only in the process that created it: a forked child scans freely.
    """

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.pid = os.getpid()

    def find_spec(self, *_args: object, **_kwargs: object) -> None:
        return None

    def find_distributions(self, *_args: object, **_kwargs: object) -> Iterator[object]:
        if os.getpid() == self.pid and not self.release.is_set():
            self.entered.set()
            self.release.wait(CHILD_TIMEOUT)
        return iter(())


@pytest.fixture
def finder(monkeypatch):
    found = HoldingFinder()
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, found])
    yield found
    found.release.set()


@pytest.fixture
def plugin(site, plugin_source):
    """A plugin that overrides FLASH_ATTN and adds PLUG_X."""
    site.module("plug.mod", plugin_source)
    site.dist(
        "plug",
        entry_points={GROUP: {"FLASH_ATTN": "plug.mod:Backend", "PLUG_X": "plug.mod:Other"}},
    )
    return site


def fork_with_threads() -> int:
    """``os.fork()`` while other threads run.

    Python 3.12+ warns about exactly that in the parent when another thread
    is still alive once attn's fork hook let the fork go on (the thread may
    have ended by then); these tests mean to fork so, and expect no other warning.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pid = os.fork()
    if pid != 0:
        at_most = 1 if sys.version_info >= (3, 12) else 0
        messages = [str(w.message) for w in caught]
        assert len(messages) <= at_most, messages
        assert all("multi-threaded, use of fork()" in m for m in messages), messages
    return pid


def wait_child(pid: int) -> int:
    """The child's exit code; a child that outlives the time limit is killed and fails."""
    deadline = time.monotonic() + CHILD_TIMEOUT
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child hung for {CHILD_TIMEOUT}s")


def fork_run(check: Callable[[], None]) -> int:
    """Fork (other threads are running); run *check* in the child; its exit code."""
    pid = fork_with_threads()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            check()
        except BaseException:  # noqa: BLE001 - report whatever the child hit
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    return wait_child(pid)


def child_checks(*, overridden: bool = True) -> None:
    """What a worker does first: lookups (built-in, plugin-added), a registration, a refresh.

    With *overridden* false, FLASH_ATTN may have been cleared in the parent.
    """
    enum = attn.AttentionBackendEnum
    assert enum["TRITON_ATTN"].get_path() == "attn.backends.attention.TritonAttentionBackend"
    flash = {"plug.mod.Backend"} if overridden else {"plug.mod.Backend", FLASH_DEFAULT}
    assert enum["FLASH_ATTN"].get_path() in flash
    assert enum["PLUG_X"].get_path() == "plug.mod.Other"
    attn.register_backend(enum.CUSTOM, "plug.mod:Other")
    assert enum.CUSTOM.get_path() == "plug.mod.Other"
    assert attn.MLAPrefillBackendEnum["CPU"].get_path().startswith("attn.backends.")
    enum.refresh()
    assert enum["FLASH_ATTN"].get_path() == "plug.mod.Backend"
    assert enum["PLUG_X"].get_class().__name__ == "Other"
    assert enum.CUSTOM.get_path() == "plug.mod.Other"


def _lookup() -> None:
    attn.AttentionBackendEnum["FLASH_ATTN"].get_path()


def _refresh() -> None:
    attn.AttentionBackendEnum.refresh()


def _register() -> None:
    attn.register_backend(attn.AttentionBackendEnum.TORCH_SDPA, "plug.mod:Other")


def _clear() -> None:
    attn.AttentionBackendEnum.FLASH_ATTN.clear_override()


def _listing() -> None:
    build_report(attn.AttentionBackendEnum)


#: Each operation that holds the registries' lock: (run it, discover first, FLASH_ATTN after).
HELD_OPERATIONS = {
    "first discovery": (_lookup, False, True),
    "refresh": (_refresh, True, True),
    "registration": (_register, False, True),
    "clear_override": (_clear, False, False),
    "listing": (_listing, False, True),
}


@pytest.mark.parametrize("operation", list(HELD_OPERATIONS))
def test_a_fork_waits_for_the_operation_another_thread_is_in(plugin, finder, operation):
    """A fork while a thread discovers, refreshes or registers waits for it; the child works."""
    run, discovered_before, overridden = HELD_OPERATIONS[operation]
    if discovered_before:
        finder.release.set()
        attn.AttentionBackendEnum["FLASH_ATTN"].get_path()
        finder.release.clear()
        finder.entered.clear()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert finder.entered.wait(CHILD_TIMEOUT), "the operation never reached discovery"
    timer = threading.Timer(0.2, finder.release.set)
    timer.start()

    def check() -> None:
        assert finder.release.is_set(), "the fork did not wait for the operation to finish"
        child_checks(overridden=overridden)

    try:
        assert fork_run(check) == 0
    finally:
        finder.release.set()
        thread.join(CHILD_TIMEOUT)
        timer.join(CHILD_TIMEOUT)
    assert not thread.is_alive()


def _invariants(registry: type) -> None:
    """The table is the discovered layer with the runtime layer on top, less what was cleared."""
    snap = state_of(registry).snapshot()
    for name, entry in snap.table.items():
        assert entry is snap.runtime.get(name, snap.discovered.get(name)), name
        assert name not in snap.cleared, name
    for name in snap.runtime:
        assert snap.table[name] is snap.runtime[name], name


def _hammer(stop: threading.Event, errors: list[str], seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311 - a reproducible mix, not cryptography
    attention, mla = REGISTRIES
    operations: list[Callable[[], object]] = [
        # Each lambda looks the name up again (that is the operation under test).
        lambda: attention["FLASH_ATTN"].get_path(),  # noqa: PLW0108
        lambda: attention["PLUG_X"].get_path(),  # noqa: PLW0108
        lambda: mla["CPU"].get_path(),  # noqa: PLW0108
        lambda: attn.register_backend(attention.CUSTOM, "plug.mod:Other"),
        lambda: attn.register_mla_prefill_backend(mla.CUSTOM, "plug.mod:Prefill"),
        attention.FLASH_ATTN.clear_override,
        attention.CUSTOM.clear_override,
        attention.refresh,
        mla.refresh,
        lambda: build_report(attention),
        lambda: build_report(mla),
    ]
    while not stop.is_set():
        operation = rng.choice(operations)
        try:
            operation()
            for registry in REGISTRIES:
                _invariants(registry)
        except (AssertionError, attn.AttnError) as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            return


@contextlib.contextmanager
def hammering(count: int) -> Iterator[list[str]]:
    stop = threading.Event()
    errors: list[str] = []
    threads = [
        threading.Thread(target=_hammer, args=(stop, errors, seed), daemon=True)
        for seed in range(count)
    ]
    for thread in threads:
        thread.start()
    try:
        yield errors
    finally:
        stop.set()
        for thread in threads:
            thread.join(CHILD_TIMEOUT)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"


def test_sixteen_threads_keep_every_table_whole(plugin):
    """Lookups, registrations, clears, refreshes and listings across both registries, at once."""
    with hammering(16) as errors:
        time.sleep(1.0)
    assert errors == []


def test_forks_while_threads_discover_refresh_and_register(plugin):
    """Children forked at random moments of four busy threads never hang and see whole tables."""

    def check() -> None:
        for registry in REGISTRIES:
            _invariants(registry)
        child_checks(overridden=False)

    with hammering(4) as errors:
        codes = [fork_run(check) for _ in range(8)]
    assert errors == []
    assert codes == [0] * 8


CACHE_SCRIPT = """
import json, time
START = time.time_ns()  # a scan the process read from the file began before it started
import attn
from attn.registry import _cache

path = attn.AttentionBackendEnum["PLUG_X"].get_path()
flash = attn.AttentionBackendEnum["FLASH_ATTN"].get_path()
scan = _cache._SHARED["attn"][1]
print(json.dumps({"path": path, "flash": flash, "from_file": scan.started < START}))
"""


def test_processes_writing_the_cache_at_once_leave_one_whole_file(plugin, python, tmp_path):
    """Four processes that scan and write the cache at once leave a file the next one trusts."""
    cache = tmp_path / "xdg"
    when = time.time() - 3600  # older than the cache's racy-tick rule
    for item in [plugin.root, *plugin.root.rglob("*"), python.runtime.site]:
        os.utime(item, (when, when), follow_symlinks=False)
    settle_attn_sources()
    env = {**python.env(), "XDG_CACHE_HOME": str(cache)}
    env.pop("ATTN_NO_CACHE", None)
    command = [str(python.runtime.python), "-c", CACHE_SCRIPT]
    writers = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    outputs = [writer.communicate(timeout=CHILD_TIMEOUT)[0] for writer in writers]
    assert [writer.returncode for writer in writers] == [0] * 4
    expected = {"path": "plug.mod.Other", "flash": "plug.mod.Backend"}
    for output in outputs:
        assert {k: v for k, v in json.loads(output).items() if k != "from_file"} == expected
    files = [f for f in (cache / "attn").iterdir() if not f.name.startswith(".")]
    assert len(files) == 1, files
    reader = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=True
    )
    assert json.loads(reader.stdout) == {**expected, "from_file": True}


#: The end of the scripts below: wait for each child in ``children`` until the
#: ``limit`` (seconds) is over, then print each exit code, or "hung" (killed).
REAP = """
codes = []
deadline = time.monotonic() + limit
for pid in children:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            codes.append(os.waitstatus_to_exitcode(status))
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            codes.append("hung")
            break
        time.sleep(0.005)
print(json.dumps(codes))
"""

#: Script lines: the first module under SLOW_PREFIX that a thread imports runs slowly,
#: so the thread holds that module's import lock while the main thread forks.
SLOW_IMPORT = """
class SlowImport:
    entered = threading.Event()
    def find_spec(self, name, path=None, target=None):
        if not name.startswith(SLOW_PREFIX) or self.entered.is_set():
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = SlowLoader(spec.loader)
        return spec

class SlowLoader:
    def __init__(self, loader):
        self.loader = loader
    def __getattr__(self, name):
        return getattr(self.loader, name)
    def create_module(self, spec):
        return self.loader.create_module(spec)
    def exec_module(self, module):
        SlowImport.entered.set()
        time.sleep(0.05)
        self.loader.exec_module(module)
"""

#: A process that forks while its threads run the first (cold) discoveries of
#: fresh toy registries, their refreshes and registrations. The first fork comes
#: while a thread is inside the import that a cold discovery starts (a finder
#: slows that import down); the others at random moments. Each child looks up
#: and exits at once; the parent prints each child's exit code, or "hung".
FORKS_DURING_COLD_DISCOVERY = (
    """
import importlib.machinery, json, os, random, sys, threading, time, types, warnings
warnings.simplefilter("ignore")  # Python 3.12+ warns about forking with threads
# Cold: no discovery cache, for attn's registries and the toys alike.
os.environ.update({f"{host}_NO_CACHE": "1" for host in ("ATTN", "TOY0", "TOY1", "TOY2", "TOY3")})
import attn
from attn.registry import BackendEnum

SLOW_PREFIX = "attn.registry."
"""
    + SLOW_IMPORT
    + """

def toy(index):
    def body(namespace):
        namespace["FAST"] = "toy_mod:Fast"
        namespace["CUSTOM"] = None
    keywords = {"group": f"toy{index}.backends", "host": f"toy{index}"}
    return types.new_class(f"Toy{index}", (BackendEnum,), keywords, body)

toys = [toy(i) for i in range(4)]
attention = attn.AttentionBackendEnum
stop = threading.Event()

def busy(registry, seed):
    rng = random.Random(seed)
    registry["FAST"].get_path()  # the first, cold discovery of a fresh registry
    while not stop.is_set():
        operation = rng.choice(["refresh", "register", "refresh attn"])
        if operation == "refresh":
            registry.refresh()
        elif operation == "register":
            attn.register_backend(attention.CUSTOM, "toy_mod:Fast")
        else:
            attention.refresh()

sys.meta_path.insert(0, SlowImport())
threads = [threading.Thread(target=busy, args=(t, i), daemon=True) for i, t in enumerate(toys)]
threads[0].start()
SlowImport.entered.wait(10)
children = []
rng = random.Random(int(sys.argv[1]))
for count in range(int(sys.argv[2])):
    pid = os.fork()
    if pid == 0:
        try:
            for registry in (*toys, attention):
                registry["FAST" if registry is not attention else "FLASH_ATTN"].get_path()
        except BaseException:
            os._exit(1)
        os._exit(0)
    children.append(pid)
    if count == 0:
        for thread in threads[1:]:
            thread.start()
    time.sleep(rng.random() / 50)
stop.set()
limit = float(sys.argv[3])
"""
    + REAP
)


def test_fifty_forks_during_cold_discoveries_refreshes_and_registrations(python):
    """No child forked while threads discover (cold), refresh or register hangs: fifty forks."""
    env = python.env()
    command = [str(python.runtime.python), "-c", FORKS_DURING_COLD_DISCOVERY]
    codes: list[object] = []
    for batch in range(5):  # ten processes of five forks, two at a time (the machine's cores)
        runs = [
            subprocess.Popen(
                [*command, str(2 * batch + i), "5", "3"], env=env, stdout=subprocess.PIPE, text=True
            )
            for i in range(2)
        ]
        for run in runs:
            out, _ = run.communicate(timeout=CHILD_TIMEOUT)
            assert run.returncode == 0
            codes += json.loads(out)
    assert codes == [0] * 50


#: A process whose thread makes the first use of attn (``attn.AttentionBackendEnum``)
#: while the main thread forks: the thread's first import of an attn module is
#: slowed down, and the fork comes while it holds that module's import lock.
FORK_DURING_FIRST_USE = (
    """
import importlib.machinery, json, os, sys, threading, time, warnings
warnings.simplefilter("ignore")  # Python 3.12+ warns about forking with threads
import attn
SLOW_PREFIX = "attn."
"""
    + SLOW_IMPORT
    + """
sys.meta_path.insert(0, SlowImport())
thread = threading.Thread(target=lambda: attn.AttentionBackendEnum["FLASH_ATTN"], daemon=True)
thread.start()
SlowImport.entered.wait(10)
pid = os.fork()
if pid == 0:
    try:
        attn.AttentionBackendEnum["FLASH_ATTN"].get_path()
    except BaseException:
        os._exit(1)
    os._exit(0)
children, limit = [pid], float(sys.argv[1])
"""
    + REAP
)


def runs_whole(python, script: str, times: int, **env: str) -> None:
    """Run *script* (one fork, then REAP) *times*: each time the child exits 0, in time."""
    command = [str(python.runtime.python), "-c", script, "5"]
    for _ in range(times):
        done = subprocess.run(
            command,
            env={**python.env(), **env},
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT,
            check=False,
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "[0]\n", "")


def test_a_fork_while_another_thread_first_uses_attn_does_not_hang(python):
    """The first attribute of attn a thread reads imports modules: a fork waits for them."""
    runs_whole(python, FORK_DURING_FIRST_USE, 5)


#: A process whose thread runs the ``attn list`` command while the main thread forks:
#: the thread's import of the command's module is slowed down, and the fork comes
#: while it holds that module's import lock. The child runs the command too.
FORK_DURING_A_COMMAND = (
    """
import contextlib, importlib.machinery, io, json, os, sys, threading, time, warnings
warnings.simplefilter("ignore")  # Python 3.12+ warns about forking with threads
import attn, attn.cli
SLOW_PREFIX = "attn.cli."
"""
    + SLOW_IMPORT
    + """
def command():
    with contextlib.redirect_stdout(io.StringIO()):
        attn.cli.main(["list"])

sys.meta_path.insert(0, SlowImport())
thread = threading.Thread(target=command, daemon=True)
thread.start()
SlowImport.entered.wait(10)
pid = os.fork()
if pid == 0:
    try:
        command()
    except BaseException:
        os._exit(1)
    os._exit(0)
children, limit = [pid], float(sys.argv[1])
thread.join()
"""
    + REAP
)


def test_a_fork_while_another_thread_runs_a_command_does_not_hang(python):
    """attn.cli.main() in a thread imports the command's module: a fork waits for the command."""
    runs_whole(python, FORK_DURING_A_COMMAND, 3, ATTN_NO_CACHE="1")


#: The end of the scripts below: fork at this moment; the child looks a
#: built-in up and exits; the parent waits for its thread and prints the
#: child's exit code.
_FORK_NOW = """
pid = os.fork()
if pid == 0:
    enum["TRITON_ATTN"].get_path()
    os._exit(0)
thread.join()
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def fork_while_a_thread_works(python, script):
    """Run *script*, then fork: the child looks a backend up, the parent joins the thread.

    Both must finish in time, the child with exit code 0.
    """
    done = subprocess.run(
        [str(python.runtime.python), "-c", script + _FORK_NOW],
        env={**python.env(), "ATTN_NO_CACHE": "1"},
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "0\n", "")


#: A host that imports logging after attn, and a finder that logs while a
#: thread's discovery holds attn's lock, at the moment the main thread forks.
FORK_WHILE_A_DISCOVERY_LOGS = """
import os, sys, threading, time, warnings
warnings.simplefilter("ignore")  # Python 3.12+ warns about forking with threads
import attn
enum = attn.AttentionBackendEnum  # the registries (and attn's fork hook) exist first
import logging

entered = threading.Event()

class LoggingFinder:
    def find_spec(self, *args):
        return None
    def find_distributions(self, *args):
        if not entered.is_set():
            entered.set()
            time.sleep(0.3)  # the main thread is in os.fork() by now
            logging.getLogger("host.finder").debug("searched")
        return iter(())

sys.meta_path.append(LoggingFinder())
thread = threading.Thread(target=lambda: enum["FLASH_ATTN"].get_path())
thread.start()
entered.wait(10)
"""


def test_a_fork_while_a_discovering_thread_logs_does_not_deadlock(python):
    """attn's fork hook runs before logging's, so a thread that logs under attn's lock finishes."""
    fork_while_a_thread_works(python, FORK_WHILE_A_DISCOVERY_LOGS)


#: A thread loads a plugin whose module imports logging and then logs
#: (slowly) at the moment the main thread forks.
FORK_WHILE_A_PLUGIN_IMPORT_LOGS = """
import os, sys, threading, time, warnings
warnings.simplefilter("ignore")  # Python 3.12+ warns about forking with threads
import attn
enum = attn.AttentionBackendEnum
enum["FLASH_ATTN"].get_path()
thread = threading.Thread(target=lambda: enum["PLUG_LOG"].get_class())
thread.start()
while "plug_log" not in sys.modules:
    time.sleep(0.001)
time.sleep(0.1)  # the plugin module has imported logging and sleeps
"""


def test_a_fork_while_a_plugin_module_imports_logging_and_logs_does_not_deadlock(site, python):
    """attn's fork hook runs before logging's, so plugin code that logs in an import finishes."""
    site.module(
        "plug_log",
        "import logging, time\n"
        "from attn.backends import AttentionBackend\n"
        "time.sleep(0.3)\n"
        "logging.getLogger('plug_log').debug('imported')  # takes logging's lock\n"
        "class Backend(AttentionBackend):\n"
        "    pass\n",
    )
    site.dist("plug-log", entry_points={GROUP: {"PLUG_LOG": "plug_log:Backend"}})
    fork_while_a_thread_works(python, FORK_WHILE_A_PLUGIN_IMPORT_LOGS)


#: A process whose four threads run every operation at random (lookups, loading
#: a plugin's class, listing, select(), refresh, registration, clear_override),
#: each starting with the registry's first discovery, cold or warm from the
#: cache. The main thread and every busy thread fork at random moments; each
#: child loads, lists, selects, registers and refreshes, then exits. The parent
#: prints each child's exit code, or "hung" for one still running after the limit.
FORKS_DURING_EVERY_OPERATION = (
    """
import json, os, random, sys, threading, time, traceback, warnings
warnings.simplefilter("ignore")  # Python 3.12+ warns about forking with threads
import attn
from attn.registry import SelectionError, build_report

enum = attn.AttentionBackendEnum
seed, forks, limit = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

def lookup():
    enum["FLASH_ATTN"].get_path()
    enum["PLUG_X"].get_path()

def load():
    enum["PLUG_X"].get_class()

def select():
    try:
        enum.select(device="cpu")
    except SelectionError:
        pass

OPERATIONS = [
    lookup,
    load,
    lambda: build_report(enum),
    select,
    enum.refresh,
    lambda: attn.register_backend(enum.CUSTOM, "plug.mod:Other"),
    enum.FLASH_ATTN.clear_override,
]

def child():
    code = 0
    try:
        assert enum["PLUG_X"].get_class().__name__ == "Other"
        assert enum["TRITON_ATTN"].get_path() == "attn.backends.attention.TritonAttentionBackend"
        build_report(enum)
        select()
        attn.register_backend(enum.CUSTOM, "plug.mod:Other")
        assert enum.CUSTOM.get_path() == "plug.mod.Other"
        enum.refresh()
        assert enum["FLASH_ATTN"].get_path() == "plug.mod.Backend"
    except BaseException:
        traceback.print_exc()
        code = 1
    os._exit(code)

guard = threading.Lock()
children = []
left = [forks]
stop = threading.Event()

def fork_now():
    with guard:
        if left[0] == 0:
            return
        left[0] -= 1
    pid = os.fork()
    if pid == 0:
        child()
    with guard:
        children.append(pid)

def busy(index):
    rng = random.Random(seed * 10 + index)
    while not stop.is_set():
        rng.choice(OPERATIONS)()
        if rng.random() < 0.15:
            fork_now()

threads = [threading.Thread(target=busy, args=(i,), daemon=True) for i in range(4)]
for thread in threads:
    thread.start()
rng = random.Random(seed)
while True:
    with guard:
        if left[0] == 0:
            break
    time.sleep(rng.random() / 50)
    fork_now()
stop.set()
for thread in threads:
    thread.join(limit)
"""
    + REAP
)

FROM_FILE = """
import time
START = time.time_ns()  # a scan the process read from the file began before it started
import attn
from attn.registry import _cache
attn.AttentionBackendEnum["PLUG_X"].get_path()
print(_cache._SHARED["attn"][1].started < START)
"""


def _age(*folders: Path) -> None:
    """Date every file and folder under *folders* an hour back, as an install of a while ago."""
    then = time.time() - 3600
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            os.utime(path, (then, then))


@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_fifty_forks_from_every_thread_during_every_operation(plugin, python, cache):
    """Forks from any thread, in any operation, cold or warm: no child fails or hangs 20 s."""
    env = python.env()
    if cache == "cold":
        env["ATTN_NO_CACHE"] = "1"
    else:
        _age(plugin.root, python.cwd)
        settle_attn_sources()
        run = [str(python.runtime.python), "-c", FROM_FILE]
        for expected in ("False", "True"):  # the first process writes the cache, the next reads it
            done = subprocess.run(
                run, env=env, cwd=python.cwd, capture_output=True, text=True, check=False
            )
            assert done.stdout.split() == [expected], done.stderr
    command = [str(python.runtime.python), "-c", FORKS_DURING_EVERY_OPERATION]
    codes: list[object] = []
    for batch in range(5):  # ten processes of five forks, two at a time (the machine's cores)
        runs = [
            subprocess.Popen(
                [*command, str(2 * batch + i), "5", str(CHILD_TIMEOUT)],
                env=env,
                cwd=python.cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        for run in runs:
            out, err = run.communicate(timeout=3 * CHILD_TIMEOUT)
            assert run.returncode == 0, err
            codes += json.loads(out)
    assert codes == [0] * 50


def test_a_fork_inside_attn_s_own_import_goes_on_at_once_and_the_child_ends_it(monkeypatch):
    """Forking in the thread that is inside an attn import does not wait for itself; the
    child, whose only thread it is, finishes that import as the parent does."""
    monkeypatch.setattr(_fork, "FORK_WAIT", CHILD_TIMEOUT)  # a wrong wait would show
    start = time.monotonic()
    with _fork.importing():
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os._exit(0 if [threading.get_ident()] == _fork._IMPORTS else 1)
        forked = time.monotonic() - start
    assert forked < CHILD_TIMEOUT / 2, "the fork waited for its own thread's import"
    assert wait_child(pid) == 0
    assert _fork._IMPORTS == []


def test_a_ctrl_c_on_the_way_into_an_attn_import_leaves_no_entry_for_forks_to_wait_on():
    """KeyboardInterrupt at each line of importing() before its import runs: no stale entry
    (one would make every later fork from another thread wait FORK_WAIT seconds)."""
    code = _fork.importing.__wrapped__.__code__
    source, first = inspect.getsourcelines(code)
    (yield_line,) = [first + i for i, text in enumerate(source) if text.strip() == "yield"]
    lines = sorted({n for *_, n in code.co_lines() if n is not None})
    before_yield = [n for n in lines if code.co_firstlineno < n < yield_line]
    assert len(before_yield) >= 2  # at least: get the thread, add its entry
    for target in before_yield:
        raised = []

        def on_line(frame, event, arg, target=target, raised=raised):
            if event == "line" and frame.f_lineno == target and not raised:
                raised.append(target)
                raise KeyboardInterrupt
            return on_line

        def on_call(frame, event, arg):
            return on_line if frame.f_code is code else None

        sys.settrace(on_call)
        try:
            with _fork.importing():
                pass
        except KeyboardInterrupt:
            pass
        finally:
            sys.settrace(None)
        stale, _fork._IMPORTS[:] = list(_fork._IMPORTS), []
        assert raised == [target]
        assert stale == [], f"a Ctrl-C at line {target} of importing() left {stale}"
