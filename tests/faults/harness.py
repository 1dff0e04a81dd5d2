"""The fault catalogue's harness: build a hostile environment, then use attn as a user would.

Every case of ``test_catalogue.py`` is a function that writes a broken or
hostile environment (distributions, modules, ``sys.path`` entries) and a
:class:`Expect` of what the ``attn`` command must do in it. :func:`check_case`
then runs ``attn list``, ``list --json``, ``list --load``, ``list --load
--json``, ``show``, ``doctor``, ``doctor --load`` and ``ATTN_STRICT=1 attn
list`` in-process through :func:`attn.cli.main` (a fresh registry state each
time, as a new process has) and looks up unrelated backends; a case whose
plugin ends the process runs the real command in a subprocess instead.

Each case runs once per discovery mode (:data:`MODES`): the reference reader,
and, when the fast reader exists, the fast reader without a cache and with a
cold and a warm cache.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema  # imported before a test narrows sys.path
import pytest

import attn
from attn.cli import main
from attn.registry.enum import state_of

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "docs" / "attn-list.schema.json"  # the schema attn publishes
REGISTRIES = (attn.AttentionBackendEnum, attn.MLAPrefillBackendEnum)

#: The discovery modes every case runs in: name -> (ATTN_READER, cache).
_ALL_MODES = {
    "reference": ("reference", "off"),
    "fast-nocache": ("fast", "off"),
    "fast-cold": ("fast", "cold"),
    "fast-warm": ("fast", "warm"),
}
_FAST_READER = importlib.util.find_spec("attn.registry._scan") is not None
_CACHE = importlib.util.find_spec("attn.registry._cache") is not None
MODES = [
    name
    for name, (reader, cache) in _ALL_MODES.items()
    if (reader == "reference" or _FAST_READER) and (cache == "off" or _CACHE)
]


@dataclass(frozen=True)
class Expect:
    """What the ``attn`` command does in a case's environment."""

    doctor: int = 1
    """``attn doctor``'s exit code."""
    doctor_load: int | None = None
    """``attn doctor --load``'s exit code (default: that of ``doctor``)."""
    culprit: tuple[str, ...] = ()
    """Strings that doctor (with ``--load`` when only loading shows it) prints."""
    listed: tuple[str, ...] = ()
    """Strings that ``attn list`` prints (the culprit, where the listing shows it)."""
    strict: int | None = None
    """``ATTN_STRICT=1 attn list`` (default: 1 when doctor finds a problem without --load)."""
    strict_load: int | None = None
    """``ATTN_STRICT=1 attn list --load`` (default: 1 when ``doctor --load`` exits 1)."""
    show: tuple[str, int] | None = None
    """``attn show NAME`` and its exit code."""
    warns: frozenset[str] = frozenset()
    """The attn warning classes a lookup issues."""
    subprocess: bool = False
    """Plugin code ends the process: run the real command in a subprocess."""
    load_exit: int = 0
    """``attn list --load``'s exit code."""
    commands: tuple[tuple[tuple[str, ...], int, tuple[str, ...]], ...] = ()
    """More commands the case runs: (arguments, exit code, strings the output holds)."""


@dataclass
class Env:
    """What a case builds its environment with."""

    sites: object
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def site(self):  # the first site, made on first use
        if "site" not in self.extra:
            self.extra["site"] = self.sites.new()
        return self.extra["site"]


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


_TEMP = tempfile.gettempdir()
#: Code that stays imported: attn itself and the suite's own modules (a checkout
#: may sit under the temporary folder) and the suite's runtime site-packages.
_KEEP = (
    str(Path(attn.__file__).resolve().parent),
    str(Path(__file__).resolve().parents[1]),
    "site-packages",
)


def fresh() -> None:
    """The registries as a new process has them: undiscovered, nothing registered, no plugin
    module imported yet."""
    for registry in REGISTRIES:
        state_of(registry).reset()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if file.startswith(_TEMP) and not any(keep in file for keep in _KEEP):
            del sys.modules[name]


def cli(*args: str) -> Run:
    """``attn ARGS`` in-process, as a new process would run it."""
    fresh()
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(list(args))
    return Run(code, out.getvalue(), err.getvalue())


def cli_process(*args: str, env: dict[str, str] | None = None) -> Run:
    """The real ``attn ARGS`` command in a subprocess seeing this test's ``sys.path``."""
    environ = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "attn", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def flat(text: str) -> str:
    """*text* with its line wrapping undone."""
    return " ".join(text.split())


def no_traceback(run: Run, what: str) -> None:
    assert "Traceback (most recent call last)" not in run.text, f"{what} printed a traceback"


def validate(document: str) -> dict[str, object]:
    payload = json.loads(document)
    jsonschema.validate(payload, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    return payload


def lookups() -> set[str]:
    """Look up unrelated backends of both registries; the attn warnings they issue."""
    fresh()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert attn.AttentionBackendEnum["TRITON_ATTN"].get_path() == (
            "attn.backends.attention.TritonAttentionBackend"
        )
        assert attn.AttentionBackendEnum.TORCH_SDPA.get_class().__name__ == "TorchSDPABackend"
        assert attn.MLAPrefillBackendEnum["TRITON_RAGGED"].get_path().startswith("attn.backends.")
    other = [w for w in caught if not issubclass(w.category, attn.AttnWarning)]
    assert other == [], [str(w.message) for w in other]
    return {w.category.__name__ for w in caught}


def set_mode(mode: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader, cache = _ALL_MODES[mode]
    monkeypatch.setenv("ATTN_READER", reader)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
    if cache == "off":
        monkeypatch.setenv("ATTN_NO_CACHE", "1")
    else:
        monkeypatch.delenv("ATTN_NO_CACHE", raising=False)


def warm_up(mode: str) -> None:
    """A warm cache: one process ran discovery (and wrote the cache) before."""
    if _ALL_MODES[mode][1] == "warm":
        cli("list", "--json")


def run_commands(expect: Expect, run_cmd: Callable[..., Run]) -> None:
    """``attn show`` and the case's own commands: each exits as expected and says what it must."""
    shown = () if expect.show is None else ((("show", expect.show[0]), expect.show[1], ()),)
    for args, code, texts in (*shown, *expect.commands):
        done = run_cmd(*args)
        no_traceback(done, f"attn {' '.join(args)}")
        assert done.code == code, done.text
        if "--json" in args and code != 2:
            json.loads(done.out)  # what plugin code prints stays out of it
        for text in texts:
            assert text in flat(done.text), f"attn {' '.join(args)} does not say {text!r}"


def check_case(expect: Expect, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every command the catalogue requires and compare with *expect*."""
    run_cmd: Callable[..., Run] = cli_process if expect.subprocess else cli
    warm_up(mode)
    doctor_load = expect.doctor if expect.doctor_load is None else expect.doctor_load

    listing = run_cmd("list")
    no_traceback(listing, "attn list")
    assert listing.code == 0, listing.text
    assert "TRITON_ATTN" in listing.out
    for text in expect.listed:
        assert text in flat(listing.text), f"attn list does not say {text!r}:\n{listing.text}"

    as_json = run_cmd("list", "--json")
    no_traceback(as_json, "attn list --json")
    assert as_json.code == 0, as_json.text
    validate(as_json.out)

    loaded = run_cmd("list", "--load")
    no_traceback(loaded, "attn list --load")
    assert loaded.code == expect.load_exit, loaded.text
    if expect.load_exit == 0:
        loaded_json = run_cmd("list", "--load", "--json")
        no_traceback(loaded_json, "attn list --load --json")
        assert loaded_json.code == 0, loaded_json.text
        validate(loaded_json.out)

    doctor = run_cmd("doctor")
    no_traceback(doctor, "attn doctor")
    assert doctor.code == expect.doctor, doctor.text
    doctored = run_cmd("doctor", "--load")
    no_traceback(doctored, "attn doctor --load")
    assert doctored.code == doctor_load, doctored.text
    report = doctored.out if expect.doctor == 0 else doctor.out
    for text in expect.culprit:
        assert text in flat(report), f"doctor does not name {text!r}:\n{report}"
    if doctor_load and not expect.subprocess:
        assert "fix: " in doctored.out

    run_commands(expect, run_cmd)

    monkeypatch.setenv("ATTN_STRICT", "1")
    strict = run_cmd("list")
    no_traceback(strict, "ATTN_STRICT=1 attn list")
    assert strict.code == (expect.doctor if expect.strict is None else expect.strict), strict.text
    if expect.load_exit == 0:
        strict_load = run_cmd("list", "--load")
        expected = expect.strict_load
        if expected is None:
            same = expect.strict is not None and doctor_load == expect.doctor
            expected = expect.strict if same else doctor_load
        assert strict_load.code == expected, strict_load.text
    monkeypatch.delenv("ATTN_STRICT")

    if not expect.subprocess:
        assert lookups() == set(expect.warns)
