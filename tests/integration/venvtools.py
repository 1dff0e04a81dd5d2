"""Driving a virtualenv that has attn installed: commands, installs, JSON checks."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attn

if TYPE_CHECKING:
    from collections.abc import Mapping

REPO_ROOT = Path(__file__).resolve().parents[2]
# The schema attn publishes with its docs.
SCHEMA_PATH = REPO_ROOT / "docs" / "attn-list.schema.json"
# The toy host tinyinfer (docs/examples/tinyinfer) is built beside the plugins.
PLUGIN_PARENTS = (
    REPO_ROOT / "plugins_example",
    Path(__file__).resolve().parent / "plugins",
    REPO_ROOT / "docs" / "examples",
)

#: The version of the checkout under test (the wheel is built from it).
ATTN_VERSION = attn.__version__

BUILTIN_NAMES = {
    "AttentionBackendEnum": [
        "FLASH_ATTN",
        "FLASH_SINK_ATTN",
        "TRITON_ATTN",
        "XFORMERS",
        "ROCM_ATTN",
        "ROCM_AITER_MLA",
        "ROCM_AITER_FA",
        "TORCH_SDPA",
        "FLASHINFER",
        "FLASHINFER_MLA",
        "TRITON_MLA",
        "CUTLASS_MLA",
        "FLASHMLA",
        "FLASHMLA_SPARSE",
        "FLASH_ATTN_MLA",
        "PALLAS",
        "IPEX",
        "NO_ATTENTION",
        "FLEX_ATTENTION",
        "TREE_ATTN",
        "ROCM_AITER_UNIFIED_ATTN",
        "CPU_ATTN",
        "CUSTOM",
    ],
    "MLAPrefillBackendEnum": [
        "FLASH_ATTN",
        "FLASHINFER",
        "TRITON_RAGGED",
        "TOKENSPEED_MLA",
        "ROCM_AITER_FA",
        "CPU",
        "ZEN_CPU",
        "CUSTOM",
    ],
}
GROUPS = {
    "AttentionBackendEnum": "attn.backends",
    "MLAPrefillBackendEnum": "attn.mla_prefill_backends",
}

PIP_TIMEOUT = 300
RUN_TIMEOUT = 120

# Variables that would make the virtualenv's interpreter see something other
# than the virtualenv, or make output depend on the terminal.
_DROPPED_VARIABLES = frozenset({"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONWARNINGS"})


def normalize(name: str) -> str:
    """Normalize a distribution name as pip does (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def run(argv: list[str | Path], *, env: Mapping[str, str] | None = None, timeout: float):
    return subprocess.run(
        [str(arg) for arg in argv],
        capture_output=True,
        text=True,
        env=None if env is None else dict(env),
        timeout=timeout,
        check=False,
    )


def check(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    if result.returncode != 0:
        msg = (
            f"{' '.join(result.args)} exited {result.returncode}\n"
            f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
        )
        raise AssertionError(msg)
    return result


def offline(env: Mapping[str, str]) -> dict[str, str]:
    """*env* for a pip that reads no configuration and no index: only the files it is given."""
    env = {key: value for key, value in env.items() if not key.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def project_of_installed(name: str, root: Path) -> Path:
    """A project to build a wheel of the installed pure-Python distribution *name* from, offline.

    Its files are the installed ones (from the distribution's RECORD): its
    packages and top-level modules; its ``pyproject.toml`` names the installed
    version and requirements.
    """
    dist = importlib.metadata.distribution(name)
    project = root / f"{name}-project"
    packages = set()
    for file in dist.files or ():
        top = file.parts[0]
        if (
            top == ".."
            or top.endswith(".dist-info")
            or (len(file.parts) == 1 and file.suffix != ".py")
        ):
            continue
        if "__pycache__" in file.parts:
            continue
        target = project / "src" / Path(*file.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(str(dist.locate_file(file))), target)
        packages.add(f"src/{top}")
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["hatchling>=1.18"]
            build-backend = "hatchling.build"

            [project]
            name = {json.dumps(dist.metadata["Name"])}
            version = {json.dumps(dist.version)}
            dependencies = {json.dumps(dist.requires or [])}

            [tool.hatch.build.targets.wheel]
            only-include = {json.dumps(sorted(packages))}
            sources = ["src"]
            """
        )
        + "".join(_entry_point_tables(dist)),
        encoding="utf-8",
    )
    return project


def _entry_point_tables(dist: importlib.metadata.Distribution) -> list[str]:
    """*dist*'s entry points as pyproject.toml tables (console scripts as ``[project.scripts]``)."""
    tables = []
    for group, eps in groupby(sorted(dist.entry_points, key=lambda e: e.group), lambda e: e.group):
        table = "scripts" if group == "console_scripts" else f"entry-points.{json.dumps(group)}"
        lines = "".join(f"{json.dumps(ep.name)} = {json.dumps(ep.value)}\n" for ep in eps)
        tables.append(f"\n[project.{table}]\n{lines}")
    return tables


def build_wheels(projects: list[Path], wheelhouse: Path) -> dict[str, Path]:
    """Build wheels of ``projects`` into ``wheelhouse``, offline, with this interpreter's hatchling.

    Returns every wheel in ``wheelhouse`` by normalized distribution name.
    """
    check(
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "-w",
                wheelhouse,
                *projects,
            ],
            env=offline(os.environ),
            timeout=PIP_TIMEOUT,
        )
    )
    return {normalize(wheel.name.split("-", 1)[0]): wheel for wheel in wheelhouse.glob("*.whl")}


@dataclass
class Venv:
    """A virtualenv with attn installed, and the wheels that can be installed into it."""

    root: Path
    wheels: Mapping[str, Path]
    validator: Any = None
    baseline: frozenset[str] = field(default_factory=frozenset)

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a user who activated the venv, with no ATTN_* variable set."""
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("ATTN_") and key not in _DROPPED_VARIABLES
        }
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["VIRTUAL_ENV"] = str(self.root)
        env["PATH"] = os.pathsep.join([str(self.bin), env.get("PATH", "")])
        env["COLUMNS"] = "250"
        env["NO_COLOR"] = "1"
        env.update(extra or {})
        return offline(env)

    def run(self, *argv: str | Path, env: Mapping[str, str] | None = None):
        """Run a command with the venv's environment plus ``env``."""
        return run(list(argv), env=self.env(env), timeout=RUN_TIMEOUT)

    def attn(self, *args: str, env: Mapping[str, str] | None = None):
        """Run the venv's ``attn`` console script."""
        return self.run(self.bin / "attn", *args, env=env)

    def run_python(self, code: str, *args: str, env: Mapping[str, str] | None = None):
        """Run ``code`` with the venv's interpreter."""
        return self.run(self.python, "-c", textwrap.dedent(code), *args, env=env)

    def python_json(self, code: str, *args: str, env: Mapping[str, str] | None = None) -> Any:
        """Run ``code`` in the venv; it must exit 0 and print one JSON document last."""
        result = check(self.run_python(code, *args, env=env))
        return json.loads(result.stdout.strip().splitlines()[-1])

    def list_json(self, *args: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Run ``attn list --json ARGS``, check it exits 0 and matches the schema."""
        result = check(self.attn("list", "--json", *args, env=env))
        data = json.loads(result.stdout)
        self.validate(data)
        return data

    def validate(self, data: object) -> None:
        """Validate an ``attn list --json`` document against docs/attn-list.schema.json."""
        if self.validator is not None:
            self.validator.validate(data)

    def pip(self, *args: str | Path):
        return check(
            run(
                [self.python, "-m", "pip", "--disable-pip-version-check", *args],
                env=self.env(),
                timeout=PIP_TIMEOUT,
            )
        )

    def install(self, *distributions: str) -> None:
        """Install the wheels of these plugin distributions (without their dependencies)."""
        wheels = [self.wheels[normalize(name)] for name in distributions]
        self.pip("install", "-q", "--no-deps", "--no-index", "--no-compile", *wheels)

    def uninstall(self, *distributions: str) -> None:
        self.pip("uninstall", "-q", "-y", *distributions)

    def distributions(self) -> frozenset[str]:
        """The normalized names of the distributions installed in the venv."""
        names = set()
        for dist_info in self.root.glob("lib/python*/site-packages/*.dist-info"):
            names.add(normalize(dist_info.name.removesuffix(".dist-info").rsplit("-", 1)[0]))
        return frozenset(names)

    def restore(self) -> None:
        """Uninstall every distribution installed since the venv was set up."""
        added = self.distributions() - self.baseline
        if added:
            self.uninstall(*sorted(added))


def registry(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The registry called ``name`` in an ``attn list --json`` document."""
    matches = [entry for entry in data["registries"] if entry["registry"] == name]
    assert len(matches) == 1, f"expected one registry {name!r} in {data!r}"
    return matches[0]


def by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows keyed by their ``name``; names must be unique."""
    keyed = {row["name"]: row for row in rows}
    assert len(keyed) == len(rows), f"duplicate names in {rows!r}"
    return keyed
