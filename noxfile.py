"""Every Python attn claims, and the artefacts users install.

``nox`` runs the whole test suite on each claimed Python that is installed
here, each in its own virtualenv, and checks the built sdist and wheel.
``nox -t ci`` is what ``.ci/run`` calls after running the README's test
command on the default interpreter: the suite on every *other* claimed
Python, the suite with ``packaging`` at the floor of attn's range, the
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
        link = _LINKS / f"python{version}"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(path)
    os.environ["PATH"] = f"{_LINKS}{os.pathsep}{os.environ.get('PATH', '')}"
    return found


FOUND = _link_interpreters()
MISSING = [v for v in PYTHONS if v not in FOUND]
OTHERS = [v for v in PYTHONS if v in FOUND and v != _DEFAULT]
#: The slow integration tests (real wheels, real virtualenvs) run on the
#: default interpreter (the README's command) and on the oldest claimed one.
INTEGRATION_PYTHONS = {_DEFAULT, PYTHONS[0]}


@nox.session(python=False, tags=["ci"])
def interpreters(session: nox.Session) -> None:
    """Say which claimed Pythons are tested; fail on CI when none but the default is."""
    for version in PYTHONS:
        where = FOUND.get(version)
        session.log(f"Python {version}: {where or 'NOT FOUND'}")
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
    session.install("-e", ".[test]")
    args = list(session.posargs)
    if session.python not in INTEGRATION_PYTHONS:
        args = ["-m", "not integration", *args]
    session.run("python", "-m", "pytest", *args)


# Every claimed Python that is installed; `-t ci` selects all but the default,
# which .ci/run has already tested with the README's command.
for _version in FOUND:
    nox.session(
        python=_version,
        name=f"tests-{_version}",
        tags=["tests"] + ([] if _version == _DEFAULT else ["ci"]),
    )(_tests)


def _packaging_floor() -> str:
    """The oldest packaging attn's dependency range allows (pyproject: ``packaging>=22``)."""
    project = nox.project.load_toml(ROOT / "pyproject.toml")["project"]
    (requirement,) = (r for r in map(Requirement, project["dependencies"]) if r.name == "packaging")
    (floor,) = (s.version for s in requirement.specifier if s.operator == ">=")
    return floor


@nox.session(name="packaging-floor", python=_DEFAULT, tags=["ci"])
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
    session.run("python", "-m", "pytest", "-m", "not integration", *session.posargs)


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


@nox.session(name="sdist-tests", tags=["ci"])
def sdist_tests(session: nox.Session) -> None:
    """Run the whole suite from the built sdist, attn installed from it (not editable)."""
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
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", *session.posargs)
