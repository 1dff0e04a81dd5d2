"""Benchmark attn's plugin discovery side by side with the other ways to read entry points.

Times whole fresh processes, every method once per round, rounds interleaved
(every mode and every environment in the same rounds), so noise hits
them alike. The figure is each process's CPU time (user + system, interpreter
start-up included), which other work on a shared machine disturbs far less than
wall time; the table shows wall-time medians too, and the CPU time of the
method's own code as the process measured it (after its prelude: no start-up,
no host imports), a far steadier figure where the floor is large.

Environments (sites.py builds the first two):

- synthetic: N ``*.dist-info`` folders beside their packages, on ``PYTHONPATH``
  (30 % declare console scripts; 10 declare ``attn.backends`` entry points,
  one overriding FLASH_ATTN, and require ``attn``);
- realistic: the same distributions in the shapes real environments hold
  (egg-info folders and files, a develop egg-link, a zipped egg, a wheel on
  ``sys.path``, a ``.pth``-added folder, setuptools and hatchling editables),
  added with ``site.addsitedir`` as Python adds site-packages, so the ``.pth``
  files run;
- venv (``--venv PATH``): an existing virtualenv's interpreter and site-packages.

Processes: *bare* (``python -c``), and *host*: a process that first imports
what every engine imports (``HOST_IMPORTS``), timed above its own floor (a
process that makes only those imports). Modes: ``bare`` and ``host`` on the
synthetic sites at every N; ``realistic-bare``, ``realistic-host``,
``venv-bare`` and ``venv-host`` on one environment each.

Methods: the floor; ``import enum``; the standard library's
``importlib.metadata.entry_points(group="attn.backends")``; the
``importlib_metadata`` backport; stevedore's entry-point cache, cold (emptied
before each run) and warm; pluggy's ``load_setuptools_entrypoints``;
``pkg_resources.iter_entry_points``; ``import attn``; attn's lookup
``AttentionBackendEnum["FLASH_ATTN"]``, cold (no cache) and warm (the cache of
the last process); ``attn list --json``, cold and warm. A host process runs no
``import enum`` (it has it) and no ``attn list`` (a command is a bare process).

It prints per mode the medians and the ratios to the standard library's (of
the time above the floor, and in-process), checks the goals of issue 16, and
draws ``docs/assets/bench-discovery.png`` (see ``plot``). ``--smoke``
runs every mode at small sizes, a few rounds, and draws nothing: it only
proves the benchmark still runs. See bench/README.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from sites import GROUP, PLUGINS, age, build_realistic, build_site

if TYPE_CHECKING:
    from collections.abc import Iterable

    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

HOST_IMPORTS: Final = (
    "typing",
    "re",
    "dataclasses",
    "inspect",
    "logging",
    "threading",
    "json",
    "pathlib",
    "email",
    "importlib.metadata",
    "packaging.version",  # what engines compare versions with; not packaging.requirements
    "argparse",
)
REALISTIC_SIZE: Final = 300
"""Synthetic distributions in the realistic site, about as many as a real virtualenv holds."""


class Method(NamedTuple):
    """One way of reading the plugins, as the code of a fresh ``python -c`` process."""

    key: str
    label: str
    code: str
    needs: str | None = None
    """A module that must be importable, else the method is skipped."""
    cache: str | None = None
    """``cold``: the method's cache folder is emptied before each run; ``warm``: kept."""
    bare_only: bool = False
    """Not run in a host process: ``import enum`` (a host has it) and the command."""
    setup: str = ""
    """Run before the clock starts: in the whole process's figures, not in the in-process one."""
    only: tuple[str, ...] = ()
    """The modes it runs in; empty: every mode."""

    def runs_in(self, mode: Mode) -> bool:
        """Whether *mode* runs it (when what it *needs* is installed)."""
        return not (mode.host and self.bare_only) and (not self.only or mode.key in self.only)


_LIST: Final = (
    "import sys; from attn.cli import main; sys.argv = ['attn', 'list', '--json']; main()"
)
_RESOLVE: Final = 'import attn; attn.AttentionBackendEnum["FLASH_ATTN"]'
_STEVEDORE: Final = f"from stevedore import _cache; _cache.get_group_named({GROUP!r})"
_STDLIB: Final = f"import importlib.metadata as m; m.entry_points(group={GROUP!r})"
# A host that imported the backport (dask imports it on Python 3.10 and 3.11): importlib.metadata
# reads by its rules from then on. In the host modes of the realistic site and the real virtualenv.
_BACKPORT: Final = "import importlib_metadata\n"
_HOSTS: Final = ("realistic-host", "venv-host")

METHODS: Final = (
    Method("pass", "python -c pass (floor)", "pass"),
    Method("enum", "import enum", "import enum", bare_only=True),
    Method("stdlib", "importlib.metadata entry_points(group=)", _STDLIB),
    Method(
        "backport",
        "importlib_metadata (backport)",
        f"import importlib_metadata as m; m.entry_points(group={GROUP!r})",
        needs="importlib_metadata",
    ),
    Method("stevedore-cold", "stevedore cache, cold", _STEVEDORE, "stevedore", "cold"),
    Method("stevedore-warm", "stevedore cache, warm", _STEVEDORE, "stevedore", "warm"),
    Method(
        "pluggy",
        "pluggy load_setuptools_entrypoints",
        f"import pluggy; pluggy.PluginManager('attn').load_setuptools_entrypoints({GROUP!r})",
        needs="pluggy",
    ),
    Method(
        "pkg_resources",
        "pkg_resources iter_entry_points",
        "import warnings; warnings.simplefilter('ignore'); import pkg_resources; "
        f"list(pkg_resources.iter_entry_points({GROUP!r}))",
        needs="pkg_resources",
    ),
    Method("import-attn", "import attn", "import attn"),
    Method("attn-cold", "attn resolve, cold (no cache)", _RESOLVE, cache="cold"),
    Method("attn-warm", "attn resolve, warm (cache hit)", _RESOLVE, cache="warm"),
    *(
        Method(
            key,
            f"{what}, importlib_metadata imported",
            code,
            "importlib_metadata",
            cache,
            setup=_BACKPORT,
            only=_HOSTS,
        )
        for key, what, code, cache in (
            ("stdlib-backport", "stdlib", _STDLIB, None),
            ("attn-cold-backport", "attn resolve, cold", _RESOLVE, "cold"),
            ("attn-warm-backport", "attn resolve, warm", _RESOLVE, "warm"),
        )
    ),
    Method("list-cold", "attn list --json, cold", _LIST, cache="cold", bare_only=True),
    Method("list-warm", "attn list --json, warm", _LIST, cache="warm", bare_only=True),
)


class Mode(NamedTuple):
    """An environment and a kind of process."""

    key: str
    title: str
    environment: str
    """``synthetic`` (every N), ``realistic`` or ``venv``."""
    host: bool
    """The process first imports HOST_IMPORTS; its floor is a process that does only that."""


MODES: Final = (
    Mode("bare", "bare process, synthetic site", "synthetic", host=False),
    Mode("host", "host process, synthetic site", "synthetic", host=True),
    Mode("realistic-bare", "bare process, realistic site", "realistic", host=False),
    Mode("realistic-host", "host process, realistic site", "realistic", host=True),
    Mode("venv-bare", "bare process, real virtualenv", "venv", host=False),
    Mode("venv-host", "host process, real virtualenv", "venv", host=True),
)


def label(mode: Mode, method: Method) -> str:
    if method.key == "pass" and mode.host:
        return "host imports only (floor)"
    return method.label


def importable(python: str, module: str) -> bool:
    """Whether *module* imports in *python*."""
    if python == sys.executable:
        return importlib.util.find_spec(module) is not None
    done = subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False)
    return done.returncode == 0


class Environment(NamedTuple):
    """What the processes of one environment share."""

    python: str
    size: int
    """Installed distributions: the synthetic N, or what importlib.metadata counts."""
    pythonpath: Path | None
    site: Path | None
    """A folder each process adds with ``site.addsitedir`` before anything else."""


_CLOCK: Final = "import time as _t; _t0 = _t.process_time()\n"
_REPORT: Final = "\nimport sys as _s; print(_t.process_time() - _t0, file=_s.stderr)\n"
"""Around the method's code: its own CPU time, the last line of the process's stderr."""


class Cell:
    """One mode at one N: its methods, each run in fresh processes with its own cache folder."""

    def __init__(self, mode: Mode, env: Environment, work: Path) -> None:
        self.mode = mode
        self.env = env
        self.work = work / mode.key
        self.cwd = self.work / "cwd"  # sys.path[0] of `python -c`: a folder nothing changes
        self.cwd.mkdir(parents=True)
        age(self.cwd)
        self.methods = [
            m
            for m in METHODS
            if m.runs_in(mode) and (m.needs is None or importable(env.python, m.needs))
        ]
        prelude = []
        if env.site is not None:
            prelude.append(f"import site; site.addsitedir({str(env.site)!r})")
        if mode.host:
            prelude.append(f"import {', '.join(HOST_IMPORTS)}")
        self.prelude = "".join(f"{line}\n" for line in prelude)
        self.cpu: dict[str, list[float]] = {m.key: [] for m in self.methods}
        self.inner: dict[str, list[float]] = {m.key: [] for m in self.methods}
        self.wall: dict[str, list[float]] = {m.key: [] for m in self.methods}

    def environ(self, method: Method) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
        if self.env.pythonpath is not None:
            env["PYTHONPATH"] = str(self.env.pythonpath)
        home = self.work / f"cache-{method.key}"
        if method.cache == "cold":
            shutil.rmtree(home, ignore_errors=True)
        home.mkdir(exist_ok=True)
        env["XDG_CACHE_HOME"] = str(home)
        if method.cache == "cold" and method.key.startswith(("attn", "list")):
            env["ATTN_NO_CACHE"] = "1"
        return env

    def run(self, method: Method, *, keep: bool = True) -> None:
        """One fresh process: its CPU time (user + system) and wall time, kept if *keep*."""
        env = self.environ(method)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [self.env.python, "-c", self.prelude + method.setup + _CLOCK + method.code + _REPORT],
            cwd=self.cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            msg = f"{self.mode.key}: {method.label} failed ({done.returncode}):\n{done.stderr}"
            raise RuntimeError(msg)
        if keep:
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            self.cpu[method.key].append(cpu)
            self.inner[method.key].append(float(done.stderr.splitlines()[-1]))
            self.wall[method.key].append(elapsed)

    def median(self, key: str) -> float:
        return statistics.median(self.cpu[key])

    def net(self, key: str) -> float:
        """Median CPU seconds above the floor."""
        return self.median(key) - self.median("pass")

    def ratio(self, key: str) -> float:
        return self.net(key) / self.net("stdlib")

    def in_process(self, key: str) -> float:
        """Median CPU seconds of the method's own code, after the prelude, in its process."""
        return statistics.median(self.inner[key])

    def in_process_ratio(self, key: str) -> float:
        return self.in_process(key) / self.in_process("stdlib")


def measure(cells: list[Cell], repeats: int) -> None:
    """Run every method of *cells* (every mode and environment) in *repeats* interleaved rounds.

    One discarded round first warms the OS file cache and the warm caches.
    """
    for keep in [False] + [True] * repeats:
        for cell in cells:
            for method in cell.methods:
                cell.run(method, keep=keep)


def distributions(python: str, site: Path | None, pythonpath: Path | None) -> int:
    """How many distributions (by name) importlib.metadata finds in that environment."""
    code = "import importlib.metadata as m; print(len({d.name for d in m.distributions()}))"
    if site is not None:
        code = f"import site; site.addsitedir({str(site)!r}); {code}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def table(cells: Iterable[Cell]) -> list[str]:
    """The Markdown table: CPU ms per process, above the floor, ratio to the stdlib; the
    method's own code timed inside its process, and its ratio; wall ms per process."""
    lines = [
        "| N | method | CPU ms | above floor | x stdlib | in-process ms | in-process x | wall ms |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for cell in cells:
        for method in cell.methods:
            key = method.key
            ratio = "" if key == "pass" else f"{cell.ratio(key):.2f}x"
            inner = "" if key == "pass" else f"{cell.in_process_ratio(key):.2f}x"
            lines.append(
                f"| {cell.env.size} | {label(cell.mode, method)} | {_ms(cell.median(key))}"
                f" | {_ms(cell.net(key))} | {ratio} | {cell.in_process(key) * 1000:.2f} | {inner}"
                f" | {_ms(statistics.median(cell.wall[key]))} |"
            )
    return lines


class Goal(NamedTuple):
    """At most *limit* times the standard library, for *method* in *mode* at *sizes*."""

    mode: str
    method: str
    limit: float
    sizes: tuple[int, ...] = ()
    """The synthetic N it is set at; empty: every N of the mode."""
    whole: bool = False
    """A ratio of whole processes, not of the time above the floor."""


GOALS: Final = (
    Goal("host", "attn-warm", 0.1, (1000,)),
    Goal("host", "attn-cold", 0.4, (1000,)),
    Goal("host", "attn-warm", 0.05, (3000,)),
    Goal("host", "attn-cold", 0.25, (3000,)),
    *(
        Goal(mode, method, limit)
        for mode in ("realistic-bare", "realistic-host", "venv-bare", "venv-host")
        for method, limit in (("attn-cold", 0.5), ("attn-warm", 0.15))
    ),
    Goal("bare", "attn-warm", 0.3, (1000,)),
    Goal("bare", "attn-cold", 0.5, (1000, 3000)),
    Goal("bare", "attn-cold", 1.0),
    Goal("bare", "list-warm", 0.6, (1000,), whole=True),
)
FLAT_SIZES: Final = (100, 1000, 3000)
FLAT_SPREAD: Final = 0.002
"""Bare mode: attn's warm cost above ``import enum`` stays within 2 ms from N=100 to 3000."""


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def goals(cells: dict[str, dict[int, Cell]]) -> list[str]:
    """Each goal of issue 16 that this run measured, with the figures that decide it."""
    lines = []
    for goal in GOALS:
        by_n = cells.get(goal.mode, {})
        sizes = goal.sizes or tuple(by_n)
        if not by_n or any(n not in by_n for n in sizes):
            continue
        if goal.method not in by_n[sizes[0]].cpu:
            continue
        name = next(m.label for m in METHODS if m.key == goal.method)
        where = f" at N={', '.join(map(str, sizes))}" if goal.sizes or len(sizes) > 1 else ""
        if goal.whole:
            ratios = [by_n[n].median(goal.method) / by_n[n].median("stdlib") for n in sizes]
            figures = {"whole processes": ratios}
        else:
            figures = {
                "above the floor": [by_n[n].ratio(goal.method) for n in sizes],
                "in-process": [by_n[n].in_process_ratio(goal.method) for n in sizes],
            }
        lines.append(
            f"{goal.mode}: {name} <= {goal.limit}x stdlib{where}: "
            + "; ".join(
                f"{kind} {', '.join(f'{r:.3f}x' for r in ratios)} "
                + _verdict(all(r <= goal.limit for r in ratios))
                for kind, ratios in figures.items()
            )
        )
    bare = cells.get("bare", {})
    flat = [n for n in FLAT_SIZES if n in bare]
    if len(flat) > 1:
        for kind, cost in (("above the floor", Cell.net), ("in-process", Cell.in_process)):
            above = {n: cost(bare[n], "attn-warm") - cost(bare[n], "enum") for n in flat}
            spread = max(above.values()) - min(above.values())
            lines.append(
                f"bare: warm resolve above `import enum`, {kind}: "
                + ", ".join(f"N={n}: {v * 1000:.1f} ms" for n, v in above.items())
                + f" (spread {spread * 1000:.1f} ms; flat within {FLAT_SPREAD * 1000:.0f} ms: "
                + f"{_verdict(spread <= FLAT_SPREAD)})"
            )
    return lines


MARKERS: Final = "os^vDPX*<>hp8"


def _bar_panel(axes: Axes, cell: Cell, colours: dict[str, str], floor_label: str) -> None:
    """A bar per method, from the floor to its CPU time; attn's own below a line."""
    methods = [m for m in cell.methods if m.key != "pass"]
    floor = cell.median("pass") * 1000
    values = [cell.net(m.key) * 1000 for m in methods]
    at = list(range(len(methods)))
    axes.axvspan(0, floor, color="0.85", label=floor_label)
    axes.axvline(floor, color="black", linestyle=":", linewidth=2)
    axes.barh(at, values, left=floor, color=[colours[m.key] for m in methods])
    inner = [cell.in_process(m.key) * 1000 for m in methods]
    axes.barh(at, inner, left=floor, height=0.25, color="black", alpha=0.6)
    axes.set_yticks(at, [m.label for m in methods], fontsize="small")
    axes.invert_yaxis()
    for place, method, value in zip(at, methods, values, strict=True):
        if method.key == "import-attn":
            axes.axhline(place - 0.5, color="black", linewidth=0.8)
        text = f" +{value:.1f} ms, {cell.ratio(method.key):.2f}x stdlib"
        axes.text(floor + max(value, 0), place, text, va="center", fontsize="x-small")
    axes.set_title(f"{cell.mode.title}, N = {cell.env.size}", fontsize="medium")
    axes.set_xlabel("CPU ms per process, median (thin bar: the method's own code)")
    axes.margins(x=0.3)
    axes.set_xlim(left=0)
    axes.legend(loc="lower right", fontsize="small")


def _line_panel(
    axes: Axes, by_n: dict[int, Cell], keys: tuple[str, ...], colours: dict[str, str], title: str
) -> None:
    """A line per method of *keys* against N, the floor dotted over a grey band."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: PLC0415

    sizes = sorted(by_n)
    mode = by_n[sizes[0]].mode
    floors = [by_n[n].median("pass") * 1000 for n in sizes]
    axes.fill_between(sizes, floors, 1e-3, color="0.85")
    floor_label = f"floor: {label(mode, METHODS[0]).removesuffix(' (floor)')}"
    handles: list[Line2D] = axes.plot(
        sizes, floors, color="black", linestyle=":", linewidth=2.5, label=floor_label
    )
    for method in (m for m in by_n[sizes[0]].methods if m.key in keys):
        handles += axes.plot(
            sizes,
            [by_n[n].median(method.key) * 1000 for n in sizes],
            marker=MARKERS[METHODS.index(method) % len(MARKERS)],
            color=colours[method.key],
            linestyle="--" if method.cache == "cold" else "-",
            linewidth=2.5 if method.key.startswith(("attn", "list")) else 1.5,
            label=method.label,
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.set_ylim(bottom=min(floors) * 0.8)
    axes.set_title(f"{mode.title}: {title}", fontsize="medium")
    axes.set_xlabel("installed distributions (N)")
    axes.set_ylabel("CPU ms per process, median")
    axes.legend(
        handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize="small", ncol=2
    )


def plot(cells: dict[str, dict[int, Cell]], path: Path) -> None:
    """Each process's CPU time, the floor marked, in rows of two panels.

    A synthetic mode (several N) gets a row: a line per method against N (both
    axes logarithmic), attn's own methods on the left, attn's lookup against
    the anchors on the right; the floor is the black dotted line over a grey
    band. Below, a row per environment of one size (bare left, host right): a
    bar per method from the floor to its CPU time (a thin bar: the method's own
    code, in-process), labelled with the time above the floor and its ratio to
    the standard library's. Cold methods are dashed; every method has a colour
    of its own, the same in every panel.
    """
    import matplotlib as mpl  # noqa: PLC0415 - the bench extra; not needed for --smoke

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    # attn's own methods (and `import enum`, what attn builds on) ...
    own = ("enum", "import-attn", "attn-cold", "attn-warm", "list-cold", "list-warm")
    # ... and the other ways to read entry points, beside attn's lookup
    anchors: tuple[str, ...] = ("stdlib", "backport", "stevedore-cold", "stevedore-warm")
    anchors += ("pluggy", "pkg_resources", "attn-cold", "attn-warm")
    colours = {
        "enum": "#7f7f7f",
        "stdlib": "#1f77b4",
        "backport": "#17becf",
        "stevedore-cold": "#2ca02c",
        "stevedore-warm": "#bcbd22",
        "pluggy": "#9467bd",
        "pkg_resources": "#8c564b",
        "import-attn": "#e377c2",
        "attn-cold": "#ff7f0e",
        "attn-warm": "#d62728",
        "list-cold": "#08306b",
        "list-warm": "#00a087",
        "stdlib-backport": "#6baed6",
        "attn-cold-backport": "#fdae6b",
        "attn-warm-backport": "#fc9272",
    }
    modes = [m for m in MODES if m.key in cells]
    lines = [m for m in modes if len(cells[m.key]) > 1]
    bars = [m for m in modes if len(cells[m.key]) == 1]
    environments = list(dict.fromkeys(m.environment for m in bars))
    # the line rows and the bar rows in subfigures of their own, each with its own widths
    blocks = [n for n in (len(lines), len(environments)) if n]
    figure = plt.figure(figsize=(15, 6.2 * sum(blocks)), layout="constrained")
    subfigures = figure.subfigures(len(blocks), 1, squeeze=False, height_ratios=blocks)
    grids = [
        sub.subplots(n, 2, squeeze=False) for sub, n in zip(subfigures.flat, blocks, strict=True)
    ]
    for grid in grids:
        for axes in grid.flat:
            axes.set_visible(False)
            axes.grid(visible=True, which="both", alpha=0.3)
    for row, mode in enumerate(lines):
        for column, (keys, title) in enumerate(
            ((own, "attn's own methods"), (anchors, "attn against the anchors"))
        ):
            grids[0][row, column].set_visible(True)
            _line_panel(grids[0][row, column], cells[mode.key], keys, colours, title)
    for mode in bars:
        axes = grids[-1][environments.index(mode.environment), int(mode.host)]
        axes.set_visible(True)
        (cell,) = cells[mode.key].values()
        _bar_panel(
            axes, cell, colours, f"floor: {label(mode, METHODS[0]).removesuffix(' (floor)')}"
        )
    figure.suptitle(f"Reading {GROUP} plugins: CPU time of whole fresh processes")
    figure.savefig(path, dpi=100)


def describe(python: str) -> tuple[str, str]:
    """The Python version of *python* and the version of the attn it imports."""
    code = "import sys, attn; print(sys.version.split()[0], attn.__version__)"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    version, attn = done.stdout.split()
    return version, attn


def provenance() -> str:
    """Today's date and the commit of this checkout."""
    repo = Path(__file__).resolve().parent.parent
    git = ["git", "-C", str(repo)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, check=False)
    changes = subprocess.run(
        [*git, "status", "--porcelain", "src"], capture_output=True, check=False
    )
    commit = head.stdout.decode().strip() or "unknown"
    dirty = " (src/ with uncommitted changes)" if changes.stdout.strip() else ""
    return f"{time.strftime('%Y-%m-%d')}, commit {commit}{dirty}"


def environments(
    args: argparse.Namespace, modes: list[Mode], work: Path
) -> Iterable[tuple[Environment, list[Mode], Path]]:
    """Each environment to measure, built on the way, with its modes and its work folder."""
    synthetic = [m for m in modes if m.environment == "synthetic"]
    for count in args.sizes if synthetic else []:
        folder = work / f"n{count}"
        folder.mkdir()
        yield Environment(args.python, count, build_site(folder, count), None), synthetic, folder
    realistic = [m for m in modes if m.environment == "realistic"]
    if realistic:
        folder = work / "realistic"
        pyver = ".".join(describe(args.python)[0].split(".")[:2])
        site = build_realistic(folder, args.realistic_size, pyver)
        count = distributions(args.python, site, None)
        yield Environment(args.python, count, None, site), realistic, folder
    venv = [m for m in modes if m.environment == "venv"]
    if venv:
        python = str(args.venv / "bin" / "python")
        count = distributions(python, None, None)
        yield Environment(python, count, None, None), venv, work / "venv"


def main(argv: list[str] | None = None) -> int:
    """Build the environments, time every method, print the tables and the goals, plot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--smoke", action="store_true", help="3 rounds at small N; no plot")
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(n) for n in text.split(",")],
        help="comma-separated numbers of synthetic distributions (default 10,100,1000,3000)",
    )
    parser.add_argument("--repeats", type=int, help="interleaved rounds (default 21)")
    parser.add_argument(
        "--modes",
        type=lambda text: set(text.split(",")),
        help="comma-separated modes or environments (default bare,host,realistic, and venv "
        f"with --venv): {', '.join(m.key for m in MODES)}, realistic, venv",
    )
    parser.add_argument("--venv", type=Path, help="a virtualenv with attn installed, for venv-*")
    parser.add_argument(
        "--plot",
        type=Path,
        default=Path(__file__).parent.parent / "docs" / "assets" / "bench-discovery.png",
        help="where to draw the plot (default docs/assets/bench-discovery.png)",
    )
    parser.add_argument("--python", default=sys.executable, help="an interpreter with attn")
    args = parser.parse_args(argv)
    wanted = args.modes or {"bare", "host", "realistic", *(["venv"] if args.venv else [])}
    modes = [m for m in MODES if m.key in wanted or m.environment in wanted]
    if not modes or len(wanted - {m.key for m in MODES} - {"realistic", "venv"}):
        parser.error(f"unknown mode in {','.join(sorted(wanted))}")
    if any(m.environment == "venv" for m in modes) and args.venv is None:
        parser.error("the venv modes need --venv PATH")
    args.sizes = args.sizes or ([10, 50] if args.smoke else [10, 100, 1000, 3000])
    args.realistic_size = 20 if args.smoke else REALISTIC_SIZE
    repeats: int = args.repeats or (3 if args.smoke else 21)
    python, attn = describe(args.python)
    print(
        f"Python {python}, attn {attn}, {os.cpu_count()} CPUs, {repeats} interleaved rounds, "
        f"fresh processes; {PLUGINS} plugin distributions per site; {provenance()}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if args.venv is not None:
        python, attn = describe(str(args.venv / "bin" / "python"))
        print(f"virtualenv {args.venv}: Python {python}, attn {attn}")
    started = time.perf_counter()
    cells: dict[str, dict[int, Cell]] = {}
    with tempfile.TemporaryDirectory(prefix="attn-bench-") as tmp:
        # Every environment is built first and measured in the same rounds, so that a machine
        # that drifts (faster or slower for minutes) shifts every N alike, not one N.
        measured = [
            Cell(mode, env, folder)
            for env, group, folder in environments(args, modes, Path(tmp))
            for mode in group
        ]
        print(f"  {len(measured)} mode and environment pairs built", file=sys.stderr)
        measure(measured, repeats)
        for cell in measured:
            cells.setdefault(cell.mode.key, {})[cell.env.size] = cell
    for mode in modes:
        by_n = cells[mode.key]
        methods = next(iter(by_n.values())).methods
        skipped = [m.label for m in METHODS if m not in methods and m.runs_in(mode)]
        print(f"\n### {mode.key}: {mode.title}\n")
        if skipped:
            print(f"Skipped (not installed): {', '.join(skipped)}\n")
        print("\n".join(table(by_n.values())))
    took = time.perf_counter() - started
    print(f"\n{took:.0f} s in all; load average at the end {os.getloadavg()[0]:.1f}\n")
    print("\n".join(goals(cells)))
    if not args.smoke:
        plot(cells, args.plot)
        print(f"\nplot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
