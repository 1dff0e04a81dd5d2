"""Check attn's sdist and wheel as users get them.

Usage: ``python .ci/check_dist.py DIST_DIR PROJECT_JSON``, where DIST_DIR
holds exactly one sdist and one wheel built from this checkout and
PROJECT_JSON is pyproject.toml's ``[project]`` table as JSON (noxfile.py's
``dist`` session writes it). It checks what each archive
contains and what the wheel's metadata says, then installs the wheel (not
editable) into a fresh virtualenv and runs ``attn --version``,
``attn list --json`` and ``attn doctor`` there, from a folder outside the
checkout so that nothing of the source tree can be imported by accident.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import venv
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any

import jsonschema
from packaging.metadata import Metadata

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300
#: What never belongs in an archive users download.
JUNK = ("__pycache__/", ".pyc", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", ".venv/")


class CheckError(Exception):
    """One thing wrong with an artefact."""


def _source_files() -> set[str]:
    """Every file of the import package, relative to src/ (attn/...)."""
    src = ROOT / "src"
    return {
        path.relative_to(src).as_posix()
        for path in (src / "attn").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def _no_junk(names: list[str], archive: str) -> None:
    junk = [n for n in names if any(j in n or n.endswith(j) for j in JUNK)]
    if junk:
        msg = f"{archive} ships caches or build leftovers: {junk[:5]}"
        raise CheckError(msg)


def check_wheel(wheel: Path, project: dict[str, Any]) -> str:
    """Check the wheel's files and metadata; return its version."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        version = str(project["version"])
        info = f"attn-{version}.dist-info/"
        metadata_text = archive.read(info + "METADATA").decode("utf-8")
        entry_points = archive.read(info + "entry_points.txt").decode("utf-8")
    _no_junk(names, wheel.name)
    package = {n for n in names if not n.startswith(info)}
    expected = _source_files()
    if package != expected:
        msg = (
            f"{wheel.name}: package files differ from src/attn: "
            f"missing {sorted(expected - package)}, unexpected {sorted(package - expected)}"
        )
        raise CheckError(msg)
    if "attn/py.typed" not in package:
        msg = f"{wheel.name} does not ship attn/py.typed: type checkers would ignore attn's hints"
        raise CheckError(msg)
    if any(n.startswith("tests/") for n in names):
        msg = f"{wheel.name} ships the test suite"
        raise CheckError(msg)

    # validate=True raises on any field that the core metadata spec rejects.
    meta = Metadata.from_email(metadata_text, validate=True)
    fields = Parser().parsestr(metadata_text)
    checks = {
        "Name": (meta.name, project["name"]),
        "Version": (str(meta.version), version),
        "Requires-Python": (str(meta.requires_python), project["requires-python"]),
        "Classifier": (fields.get_all("Classifier"), project["classifiers"]),
        "Requires-Dist (run time)": (
            [str(r) for r in meta.requires_dist or () if r.marker is None],
            project["dependencies"],
        ),
    }
    for field, (got, want) in checks.items():
        if got != want:
            msg = f"{wheel.name}: METADATA {field} is {got!r}, pyproject.toml says {want!r}"
            raise CheckError(msg)
    if "attn = attn.cli:main" not in entry_points:
        msg = f"{wheel.name}: no `attn` console script in entry_points.txt"
        raise CheckError(msg)
    return version


#: The folders whose every file the suite reads or builds from (docs pages and
#: snippets, the example plugins and the integration tests' plugin projects).
SUITE_FOLDERS = ("tests", "docs", "plugins_example")


def _suite_files() -> set[str]:
    """Every file of SUITE_FOLDERS in this checkout, as git tracks them (else as found)."""
    done = subprocess.run(  # noqa: S603 - a fixed git command
        ["git", "ls-files", "-z", "--", *SUITE_FOLDERS],  # noqa: S607 - git on PATH
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if done.returncode == 0 and done.stdout:
        return {name for name in done.stdout.decode("utf-8").split("\0") if name}
    found = (p for folder in SUITE_FOLDERS for p in (ROOT / folder).rglob("*") if p.is_file())
    names = {p.relative_to(ROOT).as_posix() for p in found}
    return {n for n in names if not any(j in n or n.endswith(j) for j in JUNK)}


def check_sdist(sdist: Path) -> None:
    """Check that the sdist holds the package, its metadata and everything the suite needs."""
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    top = names[0].split("/", 1)[0]
    relative = [n.split("/", 1)[1] for n in names if "/" in n]
    _no_junk(relative, sdist.name)
    required = {"pyproject.toml", "README.md", "PKG-INFO", "noxfile.py", "mkdocs.yml"}
    required |= {f"src/{name}" for name in _source_files()} | _suite_files()
    missing = sorted(required - set(relative))
    if missing:
        msg = f"{sdist.name} ({top}/) lacks {missing}"
        raise CheckError(msg)
    if not any(n.startswith("tests/") for n in relative):
        msg = f"{sdist.name} lacks the test suite (tests/)"
        raise CheckError(msg)


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    print("$", " ".join(command), flush=True)
    return subprocess.run(  # noqa: S603 - the commands of the venv made here
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def check_installed(wheel: Path, version: str) -> None:
    """Install the wheel into a fresh venv and run the attn command there."""
    with tempfile.TemporaryDirectory(prefix="attn-wheel-") as tmp:
        home = Path(tmp)
        venv.create(home / "venv", with_pip=True)
        bindir = home / "venv" / "bin"
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"} and not k.startswith("ATTN_")
        }
        env["XDG_CACHE_HOME"] = str(home / "cache")
        env["COLUMNS"] = "100"
        pip = _run([str(bindir / "python"), "-m", "pip", "install", "-q", str(wheel)], home, env)
        if pip.returncode != 0:
            msg = f"pip could not install {wheel.name}:\n{pip.stdout}{pip.stderr}"
            raise CheckError(msg)

        where = _run([str(bindir / "python"), "-c", "import attn; print(attn.__file__)"], home, env)
        if not where.stdout.startswith(str(home / "venv")):
            msg = f"the venv imports attn from {where.stdout.strip()!r}, not from the wheel"
            raise CheckError(msg)

        shown = _run([str(bindir / "attn"), "--version"], home, env)
        if shown.returncode != 0 or not shown.stdout.startswith(f"attn {version} "):
            msg = f"attn --version printed {shown.stdout!r} (exit {shown.returncode})"
            raise CheckError(msg)

        listed = _run([str(bindir / "attn"), "list", "--json"], home, env)
        if listed.returncode != 0:
            msg = f"attn list --json exited {listed.returncode}:\n{listed.stderr}"
            raise CheckError(msg)
        document = json.loads(listed.stdout)
        schema = json.loads((ROOT / "docs" / "attn-list.schema.json").read_text(encoding="utf-8"))
        jsonschema.validate(document, schema)
        registries = [r["registry"] for r in document["registries"]]
        if document["attn_version"] != version or registries != [
            "AttentionBackendEnum",
            "MLAPrefillBackendEnum",
        ]:
            msg = f"attn list --json: version {document['attn_version']!r}, {registries}"
            raise CheckError(msg)

        doctor = _run([str(bindir / "attn"), "doctor"], home, env)
        if doctor.returncode != 0:
            msg = f"attn doctor exited {doctor.returncode}:\n{doctor.stdout}{doctor.stderr}"
            raise CheckError(msg)
        print(shown.stdout.strip())
        print(doctor.stdout.strip())


def main(argv: list[str]) -> int:
    """Check the artefacts in ``argv[0]`` against ``argv[1]``; exit 1 naming the first problem."""
    if len(argv) != 2:  # noqa: PLR2004 - DIST_DIR PROJECT_JSON
        print(__doc__, file=sys.stderr)
        return 2
    folder = Path(argv[0]).resolve()
    project = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    wheels = sorted(folder.glob("attn-*.whl"))
    sdists = sorted(folder.glob("attn-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"Error: expected one wheel and one sdist in {folder}", file=sys.stderr)
        return 2
    try:
        version = check_wheel(wheels[0], project)
        check_sdist(sdists[0])
        check_installed(wheels[0], version)
    except CheckError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f"ok: {wheels[0].name} and {sdists[0].name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
