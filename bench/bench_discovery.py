"""Benchmark attn's plugin discovery side by side with the other ways to read entry points.

Builds synthetic site folders of N installed distributions (real ``*.dist-info``
folders and a package folder each, so about two entries per distribution; 30 %
declare console scripts in ``entry_points.txt``; 10 declare ``attn.backends``
entry points and require ``attn``) and times whole fresh processes, every
method once per round, rounds interleaved, so noise hits them alike. The
figure is each process's CPU time (user + system, interpreter start-up
included), which other work on a shared machine disturbs far less than wall
time; the table shows wall-time medians too.

- ``python -c pass`` and ``import enum``: the floors;
- the standard library: ``importlib.metadata.entry_points(group="attn.backends")``;
- the ``importlib_metadata`` backport, the same call;
- stevedore's entry-point cache, cold (emptied before each run) and warm;
- pluggy's ``PluginManager.load_setuptools_entrypoints``;
- ``pkg_resources.iter_entry_points`` (setuptools), if it still installs;
- ``import attn`` alone;
- attn: ``import attn; AttentionBackendEnum["FLASH_ATTN"]``, cold (no cache:
  scan and version checks) and warm (the discovery cache of the last process);
- ``attn list --json``, the whole command, cold and warm.

It prints medians and ratios of the time above ``python -c pass`` to the
standard library's, checks the goals of the performance work, and draws
``docs/assets/bench-discovery.png`` (log-log, one line per method). ``--smoke`` runs every
method once at two small sizes, draws nothing and checks nothing: it only
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
from typing import Final, NamedTuple

GROUP: Final = "attn.backends"
PLUGINS: Final = 10
"""Distributions in attn's group (all of them when N is smaller)."""
SCRIPTS_SHARE: Final = 0.3


class Method(NamedTuple):
    """One way of reading the plugins, as the code of a fresh ``python -c`` process."""

    key: str
    label: str
    code: str
    needs: str | None = None
    """A module that must be importable, else the method is skipped."""
    cache: str | None = None
    """``cold``: the method's cache folder is emptied before each run; ``warm``: kept."""


METHODS: Final = (
    Method("pass", "python -c pass (floor)", "pass"),
    Method("enum", "import enum", "import enum"),
    Method(
        "stdlib",
        "importlib.metadata entry_points(group=)",
        f"import importlib.metadata as m; m.entry_points(group={GROUP!r})",
    ),
    Method(
        "backport",
        "importlib_metadata (backport)",
        f"import importlib_metadata as m; m.entry_points(group={GROUP!r})",
        needs="importlib_metadata",
    ),
    Method(
        "stevedore-cold",
        "stevedore cache, cold",
        f"from stevedore import _cache; _cache.get_group_named({GROUP!r})",
        needs="stevedore",
        cache="cold",
    ),
    Method(
        "stevedore-warm",
        "stevedore cache, warm",
        f"from stevedore import _cache; _cache.get_group_named({GROUP!r})",
        needs="stevedore",
        cache="warm",
    ),
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
    Method(
        "attn-cold",
        "attn resolve, cold (no cache)",
        'import attn; attn.AttentionBackendEnum["FLASH_ATTN"]',
        cache="cold",
    ),
    Method(
        "attn-warm",
        "attn resolve, warm (cache hit)",
        'import attn; attn.AttentionBackendEnum["FLASH_ATTN"]',
        cache="warm",
    ),
    Method(
        "list-cold",
        "attn list --json, cold",
        "import sys; from attn.cli import main; sys.argv = ['attn', 'list', '--json']; main()",
        cache="cold",
    ),
    Method(
        "list-warm",
        "attn list --json, warm",
        "import sys; from attn.cli import main; sys.argv = ['attn', 'list', '--json']; main()",
        cache="warm",
    ),
)

PLUGIN_MODULE: Final = "class Backend:\n    pass\n"


def build_site(root: Path, count: int) -> Path:
    """Write *count* distributions into ``root/site-N``, all dated an hour ago; return it."""
    site = root / f"site-{count}"
    site.mkdir()
    plugins = min(PLUGINS, count)
    scripts = round(count * SCRIPTS_SHARE)
    for index in range(count):
        plugin = index < plugins
        name = f"synth_attn_plugin_{index}" if plugin else f"synth_pkg_{index:04d}"
        info = site / f"{name}-1.{index % 10}.0.dist-info"
        info.mkdir()
        requires = ["attn>=0.1", "numpy>=1.21"] if plugin else [f"dep{index % 7}>=1.{index % 3}"]
        metadata = [
            "Metadata-Version: 2.1",
            f"Name: {name.replace('_', '-')}",
            f"Version: 1.{index % 10}.0",
            f"Summary: Synthetic distribution number {index}",
            "Requires-Python: >=3.10",
            *(f"Requires-Dist: {line}" for line in requires),
        ]
        (info / "METADATA").write_text("\n".join(metadata) + "\n\n", encoding="utf-8")
        (info / "RECORD").write_text("", encoding="utf-8")
        package = site / name
        package.mkdir()
        (package / "__init__.py").write_text(PLUGIN_MODULE if plugin else "", encoding="utf-8")
        if plugin:
            backend = "FLASH_ATTN" if index == 0 else f"SYNTH_ATTN_{index}"
            text = f"[{GROUP}]\n{backend} = {name}:Backend\n"
        elif index < plugins + scripts:
            text = f"[console_scripts]\n{name} = {name}:main\n"
        else:
            continue
        (info / "entry_points.txt").write_text(text, encoding="utf-8")
    age(site)
    return site


def age(folder: Path, seconds: float = 3600) -> None:
    """Date *folder* and everything in it *seconds* back, as if installed a while ago."""
    when = time.time() - seconds
    for item in [folder, *folder.rglob("*")]:
        os.utime(item, (when, when))


# For bench_workers.py: a snippet that times itself from its first line and
# prints the elapsed seconds as the last line of stderr.
_PRELUDE: Final = "import time as _t; _t0 = _t.perf_counter()\n"
_EPILOGUE: Final = "\nimport sys as _s; print(repr(_t.perf_counter() - _t0), file=_s.stderr)\n"


def _run(python: str, code: str, env: dict[str, str]) -> tuple[float, float]:
    """Run *code* in a fresh process: (seconds inside it, wall seconds of the process)."""
    start = time.perf_counter()
    done = subprocess.run(
        [python, "-c", _PRELUDE + code + _EPILOGUE],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        msg = f"benchmark snippet failed ({done.returncode}):\n{code}\n{done.stderr}"
        raise RuntimeError(msg)
    return float(done.stderr.strip().splitlines()[-1]), wall


def importable(python: str, module: str) -> bool:
    """Whether *module* imports in *python*."""
    if python == sys.executable:
        return importlib.util.find_spec(module) is not None
    done = subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False)
    return done.returncode == 0


class Runner:
    """Runs each method in fresh processes against one site, with its own cache folders."""

    def __init__(self, python: str, site: Path, work: Path) -> None:
        self.python = python
        self.site = site
        self.work = work
        self.cwd = work / "cwd"  # sys.path[0] of `python -c`: a folder nothing changes
        self.cwd.mkdir()
        age(self.cwd)

    def cache_home(self, method: Method) -> Path:
        home = self.work / f"cache-{method.key}"
        if method.cache == "cold":
            shutil.rmtree(home, ignore_errors=True)
        home.mkdir(exist_ok=True)
        return home

    def env(self, method: Method) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
        env["PYTHONPATH"] = str(self.site)
        env["XDG_CACHE_HOME"] = str(self.cache_home(method))
        if method.cache == "cold" and method.key.startswith(("attn", "list")):
            env["ATTN_NO_CACHE"] = "1"
        return env

    def run(self, method: Method) -> tuple[float, float]:
        """The whole process's CPU time (user + system) and wall time, in seconds."""
        env = self.env(method)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [self.python, "-c", method.code],
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
            msg = f"{method.label} failed ({done.returncode}):\n{done.stderr}"
            raise RuntimeError(msg)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return cpu, elapsed


Results = dict[int, dict[str, list[float]]]
"""Per N, per method: the seconds of each run."""


def measure(
    python: str, sizes: list[int], methods: list[Method], repeats: int, work: Path
) -> tuple[Results, Results]:
    """CPU and wall times of every method at every size, *repeats* interleaved rounds.

    One discarded round first warms the OS file cache and the warm caches.
    """
    results: Results = {}
    walls: Results = {}
    for count in sizes:
        folder = work / f"n{count}"
        folder.mkdir()
        runner = Runner(python, build_site(folder, count), folder)
        for method in methods:
            runner.run(method)
        times: dict[str, list[float]] = {m.key: [] for m in methods}
        wall: dict[str, list[float]] = {m.key: [] for m in methods}
        for _ in range(repeats):
            for method in methods:
                cpu, elapsed = runner.run(method)
                times[method.key].append(cpu)
                wall[method.key].append(elapsed)
        results[count] = times
        walls[count] = wall
        print(f"  N = {count}: done", file=sys.stderr)
    return results, walls


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def table(results: Results, walls: Results, methods: list[Method]) -> list[str]:
    """The Markdown table: CPU ms per process, above the floor, ratio to the stdlib; wall ms."""
    labels = {m.key: m.label for m in methods}
    lines = [
        "| N | method | CPU ms | above `pass` | x stdlib | wall ms |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for count, times in results.items():
        floor = statistics.median(times["pass"])
        stdlib = statistics.median(times["stdlib"]) - floor
        for key, values in times.items():
            median = statistics.median(values)
            above = median - floor
            ratio = "" if key == "pass" else f"{above / stdlib:.2f}x"
            wall = _ms(statistics.median(walls[count][key]))
            lines.append(
                f"| {count} | {labels[key]} | {_ms(median)} | {_ms(above)} | {ratio} | {wall} |"
            )
    return lines


def _net(times: dict[str, list[float]], key: str) -> float:
    return statistics.median(times[key]) - statistics.median(times["pass"])


def goals(results: Results) -> list[str]:
    """Each goal of the performance work with the figures that decide it."""
    lines = []

    def ratio(count: int, key: str) -> float:
        times = results[count]
        return _net(times, key) / _net(times, "stdlib")

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    if 1000 in results:
        warm = ratio(1000, "attn-warm")
        lines.append(
            f"1. warm resolve at N=1000: {warm:.3f}x stdlib (<= 0.15): {verdict(warm <= 0.15)}"
        )
    above_enum = {n: _net(t, "attn-warm") - _net(t, "enum") for n, t in results.items()}
    spread = max(above_enum.values()) - min(above_enum.values())
    flat = ", ".join(f"N={n}: {v * 1000:.1f} ms" for n, v in above_enum.items())
    lines.append(
        f"1. warm resolve above `import enum`: {flat} (spread {spread * 1000:.1f} ms; "
        f"flat within 2 ms: {verdict(spread <= 0.002)})"
    )
    cold = {n: ratio(n, "attn-cold") for n in results}
    big = [cold[n] for n in (1000, 3000) if n in cold]
    lines.append(
        "2. cold resolve: "
        + ", ".join(f"N={n}: {r:.2f}x" for n, r in cold.items())
        + f" (<= 0.4 at 1000 and 3000: {verdict(all(r <= 0.4 for r in big))}; "
        f"<= 1 everywhere: {verdict(all(r <= 1 for r in cold.values()))})"
    )
    if 1000 in results:
        listing = ratio(1000, "list-warm")
        lines.append(
            f"3. attn list --json, warm, at N=1000: {listing:.2f}x stdlib (<= 0.4): "
            f"{verdict(listing <= 0.4)}"
        )
    anchors = ["stdlib", "backport", "stevedore-cold", "pluggy", "pkg_resources"]
    for label, ours, against in (
        ("cold", "attn-cold", anchors),
        ("warm", "attn-warm", [*anchors, "stevedore-warm"]),
    ):
        losses = [
            f"{key} at N={n}"
            for n, times in results.items()
            for key in against
            if key in times and _net(times, ours) >= _net(times, key)
        ]
        lines.append(
            f"5. attn {label} beats "
            + ", ".join(k for k in against if k in next(iter(results.values())))
            + f" at every N: {verdict(not losses)}"
            + (f" (loses to {', '.join(losses)})" if losses else "")
        )
    return lines


def plot(results: Results, methods: list[Method], path: Path) -> None:
    """Cost per process against N, log-log, one line per method, the floor dashed."""
    import matplotlib as mpl  # noqa: PLC0415 - the bench extra; not needed for --smoke

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, axes = plt.subplots(figsize=(11, 6), dpi=100)
    palette = plt.get_cmap("tab20")
    axes.set_prop_cycle(color=[palette(i) for i in range(20)])
    sizes = list(results)
    for method in methods:
        if method.key not in results[sizes[0]]:
            continue
        medians = [statistics.median(results[n][method.key]) * 1000 for n in sizes]  # CPU
        floor = method.key == "pass"
        width = 2.5 if method.key.startswith(("attn", "list")) else 1.2
        axes.plot(
            sizes,
            medians,
            marker="o",
            linewidth=width,
            label=method.label,
            linestyle="--" if floor else "-",
            color="black" if floor else None,
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("installed distributions (N)")
    axes.set_ylabel("CPU time of the whole process, median ms")
    axes.set_title("Reading attn.backends plugins, one fresh process each")
    axes.grid(visible=True, which="both", alpha=0.3)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    figure.savefig(path)


def main(argv: list[str] | None = None) -> int:
    """Build the sites, time every method, print the table and the goals, draw the plot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--smoke", action="store_true", help="one round at N=10,50; no plot")
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(n) for n in text.split(",")],
        help="comma-separated numbers of distributions (default 10,100,1000,3000)",
    )
    parser.add_argument("--repeats", type=int, help="interleaved rounds (default 21)")
    parser.add_argument(
        "--plot",
        type=Path,
        default=Path(__file__).parent.parent / "docs" / "assets" / "bench-discovery.png",
        help="where to draw the plot (default docs/assets/bench-discovery.png)",
    )
    parser.add_argument("--python", default=sys.executable, help="an interpreter with attn")
    args = parser.parse_args(argv)
    sizes: list[int] = args.sizes or ([10, 50] if args.smoke else [10, 100, 1000, 3000])
    repeats: int = args.repeats or (1 if args.smoke else 21)
    methods = [m for m in METHODS if m.needs is None or importable(args.python, m.needs)]
    skipped = [m.label for m in METHODS if m not in methods]
    version = subprocess.run(
        [args.python, "-c", "import sys, attn; print(sys.version.split()[0], attn.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    print(
        f"Python {version[0]}, attn {version[1]}, {os.cpu_count()} CPUs, {repeats} interleaved "
        f"rounds, fresh processes; {PLUGINS} plugin distributions per site"
        + (f"; skipped (not installed): {', '.join(skipped)}" if skipped else "")
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attn-bench-") as tmp:
        results, walls = measure(args.python, sizes, methods, repeats, Path(tmp))
    print()
    print("\n".join(table(results, walls, methods)))
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    if not args.smoke:
        print()
        print("\n".join(goals(results)))
        plot(results, methods, args.plot)
        print(f"\nplot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
