"""Benchmark what ``Registry.select()`` costs when the chosen candidate is first, and tenth.

A toy host (written to a temporary site) declares ten backends, ``C01`` to
``C10``, each class in a module of its own; each accepts only the setting
``winner`` naming it, so ``select(winner="C01")`` chooses the first
candidate and ``select(winner="C10")`` the tenth, after nine rejections.
Three cases, each for both positions:

(s0) a fresh process, once discovery has run: importing ``attn.registry.selection``
     (which the first ``select()`` does; the same whatever is chosen);
(s1) then the first ``select()``, importing each candidate's module up to the
     chosen one (nothing after it);
(s2) in one process, settings never asked before (a new ``run`` setting each
     call, so the cache misses): the classes are loaded, the loop runs;
(s3) in one process, the same settings again: answered from the cache.

Run ``python bench/bench_selection.py`` (about 20 seconds) or with ``--quick``.
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

_COUNT: Final = 10
_HOST: Final = '''\
from attn.registry import Backend, BackendEnum


class BenchBackend(Backend):
    """The toy host's interface."""


class BenchEnum(BackendEnum, group="benchsel.backends", host="benchsel", interface=BenchBackend):
{members}
'''
_MEMBER: Final = """\
from benchsel import BenchBackend


class Candidate(BenchBackend):
    @classmethod
    def validate_configuration(cls, **settings):
        if settings.get("winner") == {name!r}:
            return []
        return [f"not the winner ({{settings.get('winner')}})"]
"""

#: In a fresh process: discovery first, then importing the selection module, then the first
#: selection; the last two timed apart.
_FRESH: Final = """\
import json, time
from benchsel import BenchEnum
BenchEnum._attn_state.ready()  # discovery, outside the figures
start = time.perf_counter()
import attn.registry.selection
imported = time.perf_counter()
chosen = BenchEnum.select(winner={winner!r})
print(json.dumps([imported - start, time.perf_counter() - imported]))
assert chosen.name == {winner!r} and len(chosen.tried) == {position}
"""

#: In one process: per round, the mean of *calls* uncached and cached selections.
_WARM: Final = """\
import json, time
from benchsel import BenchEnum
out = {{"uncached": [], "cached": []}}
BenchEnum.select(winner={winner!r})
run = 0
for _ in range({rounds}):
    start = time.perf_counter()
    for _ in range({calls}):
        run += 1
        BenchEnum.select(winner={winner!r}, run=run)
    out["uncached"].append((time.perf_counter() - start) / {calls})
    start = time.perf_counter()
    for _ in range({calls}):
        BenchEnum.select(winner={winner!r})
    out["cached"].append((time.perf_counter() - start) / {calls})
print(json.dumps(out))
"""


def build_host(root: Path) -> Path:
    """Write the toy host (its distribution and its eleven modules) under *root*."""
    package = root / "benchsel"
    package.mkdir(parents=True)
    names = [f"C{i:02d}" for i in range(1, _COUNT + 1)]
    members = "".join(f'    {n} = "benchsel.{n.lower()}:Candidate"\n' for n in names)
    (package / "__init__.py").write_text(_HOST.format(members=members), encoding="utf-8")
    for name in names:
        (package / f"{name.lower()}.py").write_text(_MEMBER.format(name=name), encoding="utf-8")
    info = root / "benchsel-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: benchsel\nVersion: 1.0\n", encoding="utf-8"
    )
    return root


def _run(python: str, code: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [python, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        msg = f"benchmark snippet failed ({done.returncode}):\n{code}\n{done.stderr}"
        raise RuntimeError(msg)
    return done.stdout.strip().splitlines()[-1]


def measure(python: str, tmp: Path, repeats: int) -> dict[str, list[float]]:
    """Every case for both positions: fresh processes round-robin, then one warm process each.

    The toy host is written under *tmp*, and the discovery cache kept there.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
    env.update(PYTHONPATH=str(build_host(tmp / "site")), XDG_CACHE_HOME=str(tmp / "cache"))
    positions = {1: "C01", _COUNT: f"C{_COUNT:02d}"}
    samples: dict[str, list[float]] = {}
    fresh = {p: _FRESH.format(winner=w, position=p) for p, w in positions.items()}
    for code in fresh.values():  # one discarded run each: fills the discovery cache
        _run(python, code, env)
    for _ in range(repeats):
        for position, code in fresh.items():
            imported, chosen = json.loads(_run(python, code, env))
            samples.setdefault(f"s0-{position}", []).append(imported)
            samples.setdefault(f"s1-{position}", []).append(chosen)
    for position, winner in positions.items():
        code = _WARM.format(winner=winner, rounds=repeats, calls=200)
        for case, values in json.loads(_run(python, code, env)).items():
            samples[f"{'s2' if case == 'uncached' else 's3'}-{position}"] = values
    return samples


_LABELS: Final = {
    "s0": "(s0) fresh process, import module",
    "s1": "(s1) fresh process, first select",
    "s2": "(s2) discovered, uncached",
    "s3": "(s3) discovered, cached",
}


def main(argv: list[str] | None = None) -> int:
    """Build the toy host, run every case, print one table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter to benchmark")
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--repeats", type=int, help="fresh processes, and warm rounds, per case")
    args = parser.parse_args(argv)
    repeats = args.repeats or (7 if args.quick else 21)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attn-bench-") as folder:
        samples = measure(args.python, Path(folder), repeats)
    print(f"{os.cpu_count()} CPUs, {repeats} runs per case; microseconds, medians")
    print(f"{'case':<34} {'1st':>9} {'10th':>9} {'10th/1st':>9}")
    for case, label in _LABELS.items():
        first = statistics.median(samples[f"{case}-1"])
        tenth = statistics.median(samples[f"{case}-{_COUNT}"])
        print(f"{label:<34} {first * 1e6:9.1f} {tenth * 1e6:9.1f} {tenth / first:9.2f}")
    print(f"{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
