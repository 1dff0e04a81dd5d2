"""Benchmark attn's plugin discovery against importlib.metadata.

Builds synthetic site folders of N distributions (real ``*.dist-info`` folders
with ``METADATA`` and ``entry_points.txt``, a few of them declaring
``attn.backends`` entry points) and times, in fresh subprocesses so that no
cache is warm and every import is counted:

(a) ``import attn`` alone;
(b) attn's full discovery: ``import attn; attn.AttentionBackendEnum["FLASH_ATTN"]``;
(c) the reference: ``importlib.metadata.entry_points(group="attn.backends")``
    and the ``Requires-Dist`` of those distributions (attn reads them too);
(d) the same with the ``importlib_metadata`` backport, if installed;
(e) ``attn list --json`` end to end.

Then, in one warm process per N, ``attn.registry.discovery.discover(...)``
against ``importlib.metadata.entry_points(group=...)``.

Run ``python bench/bench_discovery.py`` (about 3 minutes) or with ``--quick``
(about 30 seconds). See bench/README.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

GROUP: Final = "attn.backends"
PLUGINS_PER_SITE: Final = 5
"""How many distributions of a synthetic site declare ``attn.backends`` entry points."""

# Every snippet starts its clock on its first line and prints the elapsed
# seconds as the last line of stderr, so interpreter start-up is left out of
# the in-process figure; the runner also takes the wall time of the process.
_PRELUDE: Final = "import time as _t; _t0 = _t.perf_counter()\n"
_EPILOGUE: Final = "\nimport sys as _s; print(repr(_t.perf_counter() - _t0), file=_s.stderr)\n"

_REFERENCE: Final = """\
import {module} as _md
_eps = _md.entry_points(group={group!r})
_seen = {{}}
for _ep in _eps:
    _seen.setdefault(_ep.dist.name, _ep.dist.requires)
assert len(_eps) >= {plugins}, len(_eps)
"""

_CASES: Final[dict[str, tuple[str, str]]] = {
    "a": ("import attn", "import attn\n"),
    "b": (
        'attn: AttentionBackendEnum["FLASH_ATTN"]',
        (
            "import attn\n"
            'attn.AttentionBackendEnum["FLASH_ATTN"]\n'
            "assert attn.registry.state_of(attn.AttentionBackendEnum).snapshot().table\n"
        ),
    ),
    "c": (
        "importlib.metadata (reference)",
        _REFERENCE.format(module="importlib.metadata", group=GROUP, plugins=PLUGINS_PER_SITE),
    ),
    "d": (
        "importlib_metadata (backport)",
        _REFERENCE.format(module="importlib_metadata", group=GROUP, plugins=PLUGINS_PER_SITE),
    ),
    "e": (
        "attn list --json",
        "from attn.cli import main\n_rc = main(['list', '--json'])\nassert _rc == 0, _rc\n",
    ),
}


@dataclass(frozen=True, slots=True)
class Sample:
    """The timings of one case at one N, in seconds."""

    inner: list[float]
    """Measured inside the subprocess (imports included, start-up excluded)."""
    wall: list[float]
    """The whole subprocess, interpreter start-up included."""


def _requirement_lines(index: int) -> list[str]:
    return [f"synth-dep-{(index * 7 + k) % 97:02d}>=1.{k}" for k in range(index % 4)]


def build_site(root: Path, count: int) -> Path:
    """Write *count* distributions into a new folder under *root*; return the folder."""
    site = root / f"site-{count}"
    site.mkdir()
    for index in range(count):
        plugin = index < PLUGINS_PER_SITE
        name = f"synth-attn-plugin-{index}" if plugin else f"synth-pkg-{index:04d}"
        folder = site / f"{name.replace('-', '_')}-1.{index % 10}.0.dist-info"
        folder.mkdir()
        requires = ["attn>=0.1", "packaging>=22"] if plugin else _requirement_lines(index)
        metadata = [
            "Metadata-Version: 2.1",
            f"Name: {name}",
            f"Version: 1.{index % 10}.0",
            f"Summary: Synthetic distribution number {index}",
            "Requires-Python: >=3.10",
            *(f"Requires-Dist: {line}" for line in requires),
        ]
        (folder / "METADATA").write_text("\n".join(metadata) + "\n\n", encoding="utf-8")
        module = name.replace("-", "_")
        if plugin:
            backend = "FLASH_ATTN" if index == 0 else f"SYNTH_ATTN_{index}"
            entry_points = f"[{GROUP}]\n{backend} = {module}.backends:Backend{index}\n"
        else:
            entry_points = f"[console_scripts]\n{name} = {module}.cli:main\n"
        (folder / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return site


def _run(python: str, code: str, env: dict[str, str]) -> tuple[float, float]:
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


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _environment(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTN_")}
    env["PYTHONPATH"] = str(site)
    env.pop("PYTHONSTARTUP", None)
    return env


def _has_backport(python: str) -> bool:
    if python == sys.executable:
        return importlib.util.find_spec("importlib_metadata") is not None
    probe = subprocess.run(
        [python, "-c", "import importlib_metadata"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return probe.returncode == 0


def _check_cheap_import(python: str, env: dict[str, str]) -> None:
    """``import attn`` must import neither importlib.metadata nor packaging."""
    code = (
        "import sys, attn\n"
        "heavy = [m for m in ('importlib.metadata', 'importlib_metadata', 'packaging')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    _run(python, code, env)


def cold(python: str, site: Path, cases: list[str], repeats: int) -> dict[str, Sample]:
    """Time every case in fresh subprocesses, round-robin so noise hits them alike."""
    env = _environment(site)
    _check_cheap_import(python, env)
    for case in cases:  # one discarded run each: warms the OS file cache
        _run(python, _CASES[case][1], env)
    samples = {case: Sample([], []) for case in cases}
    for _ in range(repeats):
        for case in cases:
            inner, wall = _run(python, _CASES[case][1], env)
            samples[case].inner.append(inner)
            samples[case].wall.append(wall)
    return samples


_WARM: Final = """\
import json, sys, time
sys.path.insert(0, {site!r})
import importlib.metadata
import attn
from attn.registry.controls import read_controls
from attn.registry.discovery import discover

builtins = tuple(m.name for m in attn.AttentionBackendEnum)
controls = read_controls("ATTN")

def attn_discover():
    discover(group={group!r}, host="attn", controls=controls, builtin_names=builtins,
             sibling_groups=("attn.mla_prefill_backends",))

def reference():
    eps = importlib.metadata.entry_points(group={group!r})
    for ep in eps:
        ep.dist.requires

timings = {{"discover": [], "entry_points": []}}
for fn in (attn_discover, reference):
    fn()
for _ in range({repeats}):
    for key, fn in (("discover", attn_discover), ("entry_points", reference)):
        start = time.perf_counter()
        fn()
        timings[key].append(time.perf_counter() - start)
print(json.dumps(timings))
"""


def warm(python: str, site: Path, repeats: int) -> dict[str, list[float]]:
    """Time discover() and entry_points() repeatedly in one process, caches warm."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTN_")}
    code = _WARM.format(site=str(site), group=GROUP, repeats=repeats)
    done = subprocess.run(
        [python, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        msg = f"warm benchmark failed ({done.returncode}):\n{done.stderr}"
        raise RuntimeError(msg)
    parsed: dict[str, list[float]] = json.loads(done.stdout)
    return parsed


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def _print_cold(count: int, samples: dict[str, Sample]) -> None:
    reference = samples["c"]
    ref_inner = statistics.median(reference.inner)
    ref_wall = statistics.median(reference.wall)
    print(f"\nN = {count} distributions (+ the interpreter's own site-packages)")
    print(
        f"  {'case':<42} {'median':>8} {'p90':>8} {'x (c)':>6}   {'wall':>8} {'x (c)':>6}"
        "   (ms; median and p90 in-process, wall = whole process)"
    )
    for case, sample in samples.items():
        inner = statistics.median(sample.inner)
        wall = statistics.median(sample.wall)
        label = f"({case}) {_CASES[case][0]}"
        print(
            f"  {label:<42} {_ms(inner)} {_ms(_percentile(sample.inner, 0.9))}"
            f" {inner / ref_inner:6.2f}   {_ms(wall)} {wall / ref_wall:6.2f}"
        )


def _print_warm(results: dict[int, dict[str, list[float]]]) -> None:
    print("\nWarm, in one process (caches warm, nothing imported in the loop)")
    header = ("N", "discover()", "p90", "entry_points()", "p90", "ratio")
    print("  " + " ".join(f"{h:>{w}}" for h, w in zip(header, (5, 11, 8, 15, 8, 6), strict=True)))
    for count, timings in results.items():
        ours = statistics.median(timings["discover"])
        ref = statistics.median(timings["entry_points"])
        print(
            f"  {count:>5} {_ms(ours):>11} {_ms(_percentile(timings['discover'], 0.9))}"
            f" {_ms(ref):>15} {_ms(_percentile(timings['entry_points'], 0.9))}"
            f" {ours / ref:6.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    """Build the sites, run every measurement, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (about 30 s)")
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[50, 200, 1000],
        help="comma-separated numbers of distributions (default 50,200,1000)",
    )
    parser.add_argument("--repeats", type=int, help="subprocess runs per case and N")
    parser.add_argument("--warm-repeats", type=int, help="in-process runs per N")
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter to benchmark (attn installed)"
    )
    args = parser.parse_args(argv)
    repeats: int = args.repeats or (5 if args.quick else 31)
    warm_repeats: int = args.warm_repeats or (10 if args.quick else 40)
    cases = ["a", "b", "c", "d", "e"]
    if not _has_backport(args.python):
        print("importlib_metadata is not installed: case (d) skipped", file=sys.stderr)
        cases.remove("d")
    version = subprocess.run(
        [args.python, "-c", "import sys, attn; print(sys.version.split()[0], attn.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    print(
        f"Python {version[0]}, attn {version[1]}, {os.cpu_count()} CPUs, "
        f"{repeats} runs per case (cold), {warm_repeats} (warm); "
        f"{PLUGINS_PER_SITE} plugin distributions per site"
    )
    started = time.perf_counter()
    warm_results: dict[int, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="attn-bench-") as tmp:
        for count in args.sizes:
            site = build_site(Path(tmp), count)
            _print_cold(count, cold(args.python, site, cases, repeats))
            warm_results[count] = warm(args.python, site, warm_repeats)
    _print_warm(warm_results)
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    print(
        textwrap.fill(
            "x (c): ratio to the reference (c) at the same N. (a) to (e) run in fresh "
            "subprocesses; the site is first on sys.path (PYTHONPATH).",
            width=100,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
