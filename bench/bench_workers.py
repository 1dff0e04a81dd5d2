"""Benchmark what a worker pays to resolve like its driver (capture_state / apply_state).

On the synthetic sites of sites.py (as bench_discovery.py) (N distributions, five of them
attn plugins), in fresh subprocesses with a warm discovery cache (a private
``XDG_CACHE_HOME``, filled by one discarded run per case), times:

(w0) a worker without a state: ``import attn`` and a lookup in both registries;
(w1) a worker given the driver's state: unpickle it, ``attn.apply_state(state)``,
     then the same lookups;
(w2) the driver: ``import attn``, ``attn.capture_state()`` and pickling it.

Then, in one process whose registries have discovered, ``capture_state()``
and ``apply_state(state)`` called repeatedly.

Run ``python bench/bench_workers.py`` (about a minute) or with ``--quick``.
See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from sites import build_site

_LOOKUPS: Final = "attn.AttentionBackendEnum['FLASH_ATTN']; attn.MLAPrefillBackendEnum['CPU']\n"

_CASES: Final = {
    "w0": ("worker, no state", f"import attn\n{_LOOKUPS}"),
    "w1": (
        "worker, apply_state",
        (
            "import pickle\n"
            "state = pickle.loads(open({state!r}, 'rb').read())\n"
            f"import attn\nattn.apply_state(state)\n{_LOOKUPS}"
        ),
    ),
    "w2": ("driver, capture_state", "import attn, pickle\npickle.dumps(attn.capture_state())\n"),
}

_WARM: Final = """\
import json, pickle, time
import attn
state = attn.capture_state()
timings = {{"capture_state": [], "apply_state": []}}
for _ in range({repeats}):
    start = time.perf_counter()
    attn.capture_state()
    timings["capture_state"].append(time.perf_counter() - start)
    start = time.perf_counter()
    attn.apply_state(state)
    timings["apply_state"].append(time.perf_counter() - start)
print(json.dumps(timings))
"""


_PRELUDE: Final = "import time as _t; _t0 = _t.perf_counter()\n"
_EPILOGUE: Final = "\nimport sys as _s; print(repr(_t.perf_counter() - _t0), file=_s.stderr)\n"


def _run(python: str, code: str, env: dict[str, str]) -> float:
    """Seconds the snippet took, timed inside its fresh process (the last line of its stderr)."""
    done = subprocess.run(
        [python, "-c", _PRELUDE + code + _EPILOGUE],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        msg = f"benchmark snippet failed ({done.returncode}):\n{code}\n{done.stderr}"
        raise RuntimeError(msg)
    return float(done.stderr.strip().splitlines()[-1])


def _environment(site: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
    env.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(cache))
    return env


def measure(python: str, site: Path, tmp: Path, repeats: int) -> dict[str, list[float]]:
    """Cold runs of every case (round-robin), then the warm in-process calls."""
    env = _environment(site, tmp / f"cache-{site.name}")
    state = tmp / f"state-{site.name}.pickle"
    subprocess.run(
        [
            python,
            "-c",
            (
                f"import attn, pickle; open({str(state)!r}, 'wb').write(pickle.dumps("
                "attn.capture_state()))"
            ),
        ],
        env=env,
        check=True,
    )
    codes = {
        case: code.replace("{state!r}", repr(str(state))) for case, (_, code) in _CASES.items()
    }
    for code in codes.values():  # one discarded run each: fills the cache, warms the OS
        _run(python, code, env)
    samples: dict[str, list[float]] = {case: [] for case in codes}
    for _ in range(repeats):
        for case, code in codes.items():
            samples[case].append(_run(python, code, env))
    done = subprocess.run(
        [python, "-c", _WARM.format(repeats=repeats * 4)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    samples.update(json.loads(done.stdout))
    return samples


def main(argv: list[str] | None = None) -> int:
    """Build the sites, run every measurement, print one table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[50, 1000],
        help="comma-separated numbers of distributions (default 50,1000)",
    )
    parser.add_argument("--repeats", type=int, help="subprocess runs per case and N")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to benchmark")
    args = parser.parse_args(argv)
    repeats: int = args.repeats or (7 if args.quick else 21)
    print(f"{os.cpu_count()} CPUs, {repeats} runs per case; milliseconds, medians")
    print(f"{'N':>5}  {'case':<26} {'median':>8} {'p90':>8} {'x (w0)':>7}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attn-bench-") as folder:
        tmp = Path(folder)
        for count in args.sizes:
            samples = measure(args.python, build_site(tmp, count), tmp, repeats)
            base = statistics.median(samples["w0"])
            labels = {case: f"({case}) {label}" for case, (label, _) in _CASES.items()}
            labels |= {"capture_state": "warm capture_state()", "apply_state": "warm apply_state()"}
            for case, label in labels.items():
                values = sorted(samples[case])
                median = statistics.median(values)
                p90 = values[int(0.9 * (len(values) - 1))]
                ratio = f"{median / base:7.2f}" if case in _CASES else " " * 7
                print(f"{count:>5}  {label:<26} {median * 1e3:8.2f} {p90 * 1e3:8.2f} {ratio}")
    print(f"{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
