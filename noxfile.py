"""Every Python attn claims, and the artefacts users install.

``nox`` runs the whole test suite on each claimed Python that is installed
here, each in its own virtualenv, and checks the built sdist and wheel.
``nox -t ci`` is what ``.ci/run`` runs after the README's test command on
the default interpreter (it starts the sessions in two groups at once): the
suite once on every *other* claimed Python, each run under one more
condition (packaging at the floor of attn's range; every example plugin
installed beside it; from the unpacked sdist under ``python -X dev``), the
interpreter report and the distribution checks. ``nox -s mutants`` (run by
neither) measures how many realistic one-line bugs the focused tests catch.

Interpreters are found by version: ``pythonX.Y`` on ``PATH`` when it runs,
else the newest ``X.Y.*`` under pyenv's versions folder. ``PYTHONS`` is the
single list of claimed versions; a test (tests/test_supported_pythons.py)
fails when pyproject's classifiers, ``requires-python`` or the README drift
apart from it.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import nox
from packaging.requirements import Requirement
from packaging.version import Version

#: The Pythons attn claims to support, oldest first.
PYTHONS = ("3.10", "3.11", "3.12", "3.13")

ROOT = Path(__file__).resolve().parent
_LINKS = ROOT / ".nox" / "_interpreters"
_DEFAULT = f"{sys.version_info.major}.{sys.version_info.minor}"

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = False
# A claimed interpreter that is missing is reported by the `interpreters`
# session, which decides whether that fails the run; the test sessions only
# run on interpreters that were found.
nox.options.error_on_missing_interpreters = False


def _version_of(executable: str) -> str | None:
    try:
        done = subprocess.run(  # noqa: S603 - an interpreter found on this machine
            [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _patch_key(path: str) -> tuple[int, ...]:
    release = Path(path).parents[1].name  # .../versions/3.10.13/bin/python3.10
    return tuple(int(part) if part.isdigit() else -1 for part in release.split("."))


def find_python(version: str) -> str | None:
    """The path of a working ``python<version>``, or None when there is none."""
    candidates: list[str] = []
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    pattern = str(Path(pyenv_root) / "versions" / f"{version}*" / "bin" / f"python{version}")
    candidates += sorted(glob.glob(pattern), key=_patch_key, reverse=True)  # noqa: PTH207
    # A pyenv shim for a version that is not selected exists but does not run.
    return next((c for c in candidates if _version_of(c) == version), None)


def _link_interpreters() -> dict[str, str]:
    """Find each claimed Python and make ``pythonX.Y`` on PATH point at it."""
    found = {v: p for v in PYTHONS if (p := find_python(v)) is not None}
    _LINKS.mkdir(parents=True, exist_ok=True)
    for version, path in found.items():
        # A new link under a name of this process's own, then renamed over the
        # old one: two nox processes at once (.ci/run starts two) never race.
        spare = _LINKS / f".python{version}.{os.getpid()}"
        spare.unlink(missing_ok=True)
        spare.symlink_to(path)
        spare.replace(_LINKS / f"python{version}")
    os.environ["PATH"] = f"{_LINKS}{os.pathsep}{os.environ.get('PATH', '')}"
    return found


FOUND = _link_interpreters()
MISSING = [v for v in PYTHONS if v not in FOUND]
OTHERS = [v for v in PYTHONS if v in FOUND and v != _DEFAULT]


def _found_or_default(version: str) -> str:
    return version if version in FOUND else _DEFAULT


#: On CI the README's command runs the whole suite on the default Python; each
#: other claimed Python then runs the suite once more under one extra
#: condition, so that every condition and every Python is tested without one
#: whole run per pair: packaging at its floor on the oldest, every example
#: plugin installed beside the suite on 3.12, and the unpacked sdist under
#: ``python -X dev`` on the newest. A missing interpreter falls back to the
#: default one (the ``interpreters`` session reports it).
FLOOR_PYTHON = _found_or_default(PYTHONS[0])
BESIDE_PYTHON = _found_or_default("3.12")
SDIST_PYTHON = _found_or_default(PYTHONS[-1])


def _pytest(session: nox.Session, *args: str, dev_mode: bool = False) -> None:
    """Run the suite in the session's virtualenv, with a temporary folder of its own.

    Each session's own ``--basetemp`` lets two sessions run at once (.ci/run
    does) without sharing pytest's numbered temporary folders. The folder is
    made in the system's temporary folder, and ``TMPDIR`` points there too,
    rather than under ``.nox``: a worker started with ``forkserver`` listens
    on a Unix socket in ``TMPDIR``, and a socket path is limited to about 100
    bytes, which a checkout deep in the file system (or the unpacked sdist
    under ``.nox``) exceeds.
    """
    short = Path(tempfile.mkdtemp(prefix=f"attn-{session.name}-"))
    dev = ["-X", "dev"] if dev_mode else []
    command = ["python", *dev, "-m", "pytest", "-p", "no:cacheprovider"]
    try:
        session.run(
            *command,
            f"--basetemp={short / 'pytest'}",
            *args,
            *session.posargs,
            env={"TMPDIR": str(short)},
        )
    finally:
        shutil.rmtree(short, ignore_errors=True)


@nox.session(python=False, tags=["ci"])
def interpreters(session: nox.Session) -> None:
    """Say which claimed Pythons are tested; fail on CI when none but the default is."""
    for version in PYTHONS:
        where = FOUND.get(version)
        session.log(f"Python {version}: {where or 'NOT FOUND'}")
    session.log(
        f"packaging-floor on {FLOOR_PYTHON}, beside-plugins on {BESIDE_PYTHON}, "
        f"sdist-tests on {SDIST_PYTHON}"
    )
    if MISSING:
        banner = "*" * 72
        session.warn(
            f"\n{banner}\nattn claims Python {', '.join(MISSING)} but no interpreter for "
            f"{'it' if len(MISSING) == 1 else 'them'} was found: the suite does NOT run "
            f"there.\n{banner}"
        )
    if os.environ.get("CI") and not OTHERS:
        session.error(
            f"CI is set and none of the claimed Pythons other than {_DEFAULT} is installed: "
            f"install at least one of {', '.join(v for v in PYTHONS if v != _DEFAULT)}."
        )


def _tests(session: nox.Session) -> None:
    """The whole suite, integration tests included, on one claimed Python."""
    session.install("-e", ".[test]")
    _pytest(session)


# Every claimed Python that is installed, for a plain `nox` (CI runs the
# condition sessions below instead; see FLOOR_PYTHON).
for _version in FOUND:
    nox.session(python=_version, name=f"tests-{_version}", tags=["tests"])(_tests)


def _packaging_floor() -> str:
    """The oldest packaging attn's dependency range allows (pyproject: ``packaging>=22``)."""
    project = nox.project.load_toml(ROOT / "pyproject.toml")["project"]
    (requirement,) = (r for r in map(Requirement, project["dependencies"]) if r.name == "packaging")
    (floor,) = (s.version for s in requirement.specifier if s.operator == ">=")
    return floor


@nox.session(name="packaging-floor", python=FLOOR_PYTHON, tags=["ci"])
def packaging_floor(session: nox.Session) -> None:
    """The suite with packaging at the floor of attn's range (integration tests aside).

    The integration tests build wheels and install them into throwaway
    virtualenvs, where packaging is not pinned; everything else runs here.
    """
    floor = _packaging_floor()
    session.install("-e", ".[test]", f"packaging=={floor}")
    code = "import packaging; print(packaging.__version__)"
    installed = str(session.run("python", "-c", code, silent=True)).strip()
    if Version(installed) != Version(floor):
        session.error(f"packaging {installed} is installed, not the floor {floor}")
    session.log(f"packaging {installed}")
    _pytest(session, "-m", "not integration")


@nox.session(name="beside-plugins", python=BESIDE_PYTHON, tags=["ci"])
def beside_plugins(session: nox.Session) -> None:
    """The suite with every example plugin and a triton-like distribution installed beside it.

    In a 40-column terminal too: what is installed beside the suite, and the
    terminal's width, change no result. The integration tests build their own
    virtualenvs, where nothing installed here is seen, so they are left out.
    """
    session.install("-e", ".[test]")
    plugins = sorted(str(p) for p in (ROOT / "plugins_example").iterdir() if p.is_dir())
    triton_like = str(ROOT / "tests" / "integration" / "plugins" / "triton-like")
    session.install("--no-build-isolation", *plugins, triton_like)
    session.env["COLUMNS"] = "40"
    _pytest(session, "-m", "not integration")


@nox.session(python=_DEFAULT, default=False)
def mutants(session: nox.Session) -> None:
    """A mutation score: a seeded sample of one-line bugs in the modules that decide results.

    Slow (one run of the module's focused tests per mutant), so neither a plain
    ``nox`` nor ``.ci/run`` runs it: ``nox -s mutants``, arguments passed on to
    tests/mutants.py (``--list``, ``--modules _cache,compat``, ``--seed``).
    """
    session.install("-e", ".[test]")
    session.run("python", "tests/mutants.py", *session.posargs)


@nox.session(tags=["ci"])
def dist(session: nox.Session) -> None:
    """Build the sdist and the wheel offline, check them, and run the wheel as users get it."""
    outdir = Path(session.create_tmp()) / "dist"
    if outdir.exists():
        shutil.rmtree(outdir)
    session.install("build", "twine", "hatchling", "jsonschema")
    # --no-isolation: the backend installed above builds; nothing is fetched.
    # build makes the sdist, then the wheel from the unpacked sdist, so this
    # also proves the sdist is complete enough to build.
    session.run("python", "-m", "build", "--no-isolation", "--outdir", str(outdir))
    artefacts = sorted(str(p) for p in outdir.iterdir())
    session.run("python", "-m", "twine", "check", "--strict", *artefacts)
    project = nox.project.load_toml(ROOT / "pyproject.toml")["project"]
    prefix = "Programming Language :: Python :: 3."
    claimed = [c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if c.startswith(prefix)]
    if claimed != list(PYTHONS) or project["requires-python"] != f">={PYTHONS[0]}":
        session.error(
            f"pyproject.toml claims {claimed} ({project['requires-python']}), CI tests {PYTHONS}"
        )
    expected = Path(session.create_tmp()) / "project.json"
    expected.write_text(json.dumps(project), encoding="utf-8")
    session.run("python", str(ROOT / ".ci" / "check_dist.py"), str(outdir), str(expected))


@nox.session(name="sdist-tests", python=SDIST_PYTHON, tags=["ci"])
def sdist_tests(session: nox.Session) -> None:
    """Run the suite from the built sdist, attn installed from it (not editable), under -X dev.

    Python's development mode adds asyncio and resource checks and shows the
    warnings Python hides by default (errors here, as everywhere in the
    suite). The integration tests are left out: the README's command runs
    them, and the ``dist`` session checks that the sdist ships every file
    they build from.
    """
    tmp = Path(session.create_tmp())
    outdir, unpacked = tmp / "sdist", tmp / "unpacked"
    for folder in (outdir, unpacked):
        if folder.exists():
            shutil.rmtree(folder)
    session.install("build", "hatchling")
    session.run("python", "-m", "build", "--sdist", "--no-isolation", "--outdir", str(outdir))
    (sdist,) = outdir.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (root,) = unpacked.iterdir()
    session.install("--no-build-isolation", f"{root}[test]")
    session.chdir(root)
    _pytest(session, "-m", "not integration", dev_mode=True)
