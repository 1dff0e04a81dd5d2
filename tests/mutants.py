"""A mutation score for the modules that decide what attn resolves.

A fixed, seeded sample of realistic one-line bugs (a comparison turned round,
``and`` for ``or``, a check dropped, a constant off by one, an element left
out of a tuple) is applied to a copy of the repository, one at a time, and the
tests that focus on the mutated module run against it (``-x``). A mutant the
tests do not fail on survives. The score of a module is the share of its
mutants killed.

``nox -s mutants`` runs it (slow: one test run per mutant); ``.ci/run`` does
not. ``python tests/mutants.py --list`` prints the sample without running it.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The modules that decide results (in registry/, else the path under src/attn), and the
#: test files that focus on each.
MODULES: dict[str, tuple[str, ...]] = {
    "_cache": ("registry/test_cache.py", "registry/test_table.py"),
    "_scan": ("registry/test_scan.py", "registry/test_metadata.py", "faults/test_catalogue.py"),
    "_metadata": (
        "registry/test_metadata.py",
        "registry/test_scan.py",
        "registry/test_discovery.py",
        "faults/test_catalogue.py",
    ),
    "discovery": ("registry/test_discovery.py", "registry/test_scan.py", "faults/test_prefer.py"),
    "_findings": (
        "registry/test_findings.py",
        "registry/test_discovery.py",
        "registry/test_table.py",
        "test_cli.py",
    ),
    "controls": (
        "registry/test_controls.py",
        "registry/test_discovery.py",
        "registry/test_scan.py",
        "faults/test_block.py",
    ),
    "table": (
        "registry/test_table.py",
        "registry/test_enum.py",
        "registry/test_cache.py",
        "registry/test_controls.py",
        "registry/test_workers.py",
        "faults/test_concurrency.py",
    ),
    "enum": ("registry/test_enum.py", "registry/test_table.py", "registry/test_workers.py"),
    "selection": (
        "registry/test_selection.py",
        "cli/test_select.py",
        "registry/test_workers_select.py",
    ),
    "loading": (
        "registry/test_loading.py",
        "registry/test_enum.py",
        "test_cli.py",
        "test_init.py",
        "faults/test_plugin_mistakes.py",
    ),
    "listing": (
        "registry/test_build_report.py",
        "test_cli.py",
        "cli/test_listing.py",
        "cli/test_hosts.py",
        "registry/test_report.py",
        "registry/test_diagnose.py",
        "faults/test_output.py",
        "faults/test_doctor_fixes.py",
    ),
    "workers": (
        "registry/test_workers.py",
        "registry/test_workers_select.py",
        "cli/test_state.py",
    ),
    "cli/__init__": (
        "test_cli.py",
        "cli/test_hosts.py",
        "cli/test_select.py",
        "cli/test_state.py",
        "faults/test_output.py",
    ),
    "cli/listing": (
        "test_cli.py",
        "cli/test_listing.py",
        "cli/test_hosts.py",
        "faults/test_output.py",
    ),
    "cli/doctor": (
        "test_cli.py",
        "cli/test_hosts.py",
        "cli/test_state.py",
        "cli/test_select.py",
        "faults/test_doctor_fixes.py",
        "faults/test_output.py",
        "faults/test_block.py",
    ),
    "testing": ("test_testing.py", "test_isolation.py"),
    "errors": (
        "registry/test_errors.py",
        "registry/test_loading.py",
        "test_init.py",
        "test_cli.py",
    ),
    "report": (
        "registry/test_report.py",
        "registry/test_build_report.py",
        "registry/test_cache.py",
        "test_cli.py",
    ),
    "_fork": ("faults/test_concurrency.py", "registry/test_table.py"),
    "backends/_facts": (
        "backends/test_facts.py",
        "registry/test_selection.py",
        "cli/test_select.py",
    ),
}

SEED = 20
PER_MODULE = 12
#: How long one run of a module's tests may take before the mutant counts as killed (a hang).
TIMEOUT = 900

_SWAPS: dict[type, type] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.And: ast.Or,
    ast.Or: ast.And,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
}


@dataclass(frozen=True)
class Mutant:
    """One change: the source span of a node and the text that replaces it."""

    module: str
    line: int
    span: tuple[int, int, int, int]
    """(line, byte column, end line, end byte column), as :mod:`ast` gives them."""
    replacement: str
    what: str

    def apply(self, source: str) -> str:
        """*source* with this mutant's span replaced."""
        lines = source.encode("utf-8").splitlines(keepends=True)
        line, col, end_line, end_col = self.span
        head = b"".join(lines[: line - 1]) + lines[line - 1][:col]
        tail = lines[end_line - 1][end_col:] + b"".join(lines[end_line:])
        return (head + self.replacement.encode("utf-8") + tail).decode("utf-8")


def _untouched(node: ast.AST) -> list[ast.AST | None]:
    """The parts of *node* no mutant touches: what only type checkers, docs or tools read."""
    if isinstance(node, (ast.If, ast.Assign, ast.JoinedStr, ast.Expr)):
        names = [t.id for t in getattr(node, "targets", ()) if isinstance(t, ast.Name)]
        test = ast.unparse(node.test) if isinstance(node, ast.If) else None
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        # f-strings: positions inside them are not reliable before Python 3.12.
        whole = isinstance(node, ast.JoinedStr) or docstring or test == "TYPE_CHECKING"
        return [node] if whole or {"__all__", "__slots__"} & set(names) else []
    parts: list[ast.AST | None] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        parts += node.decorator_list  # dataclass(frozen=True, slots=True) and such
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]
        parts += [node.returns, *(a.annotation for a in arguments)]
    if isinstance(node, ast.AnnAssign):
        parts.append(node.annotation)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
        parts.append(node.slice)  # tuple[str, int], Callable[[], T]: types, not values
    return parts


def _skipped(tree: ast.Module) -> set[int]:
    """Ids of the nodes :func:`_untouched` names, and of everything inside them."""
    return {
        id(inner)
        for node in ast.walk(tree)
        for part in _untouched(node)
        if part is not None
        for inner in ast.walk(part)
    }


def _variants(node: ast.AST) -> list[tuple[ast.AST, str]]:
    """The mutated copies of *node* (with what each does), for the kinds of node mutated."""
    found: list[tuple[ast.AST, str]] = []
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _SWAPS:
        new = ast.Compare(node.left, [_SWAPS[type(node.ops[0])]()], node.comparators)
        found.append((new, "comparison swapped"))
    elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
        found.append((ast.BoolOp(_SWAPS[type(node.op)](), node.values), "and/or swapped"))
        found += [(value, "one operand of and/or dropped") for value in node.values]
    elif isinstance(node, ast.BinOp) and type(node.op) in _SWAPS:
        found.append(
            (ast.BinOp(node.left, _SWAPS[type(node.op)](), node.right), "operator swapped")
        )
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        found.append((node.operand, "not dropped"))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        found.append((ast.Constant(not node.value), "boolean flipped"))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        n = node.value
        changed = 1 - n if n in {0, 1} else (n - 1 if n < 100 else 0)
        found.append((ast.Constant(changed), "constant changed"))
    elif isinstance(node, ast.Constant) and type(node.value) is str and 0 < len(node.value) < 4:
        found.append((ast.Constant(node.value[:-1]), "short string cut"))
    elif (
        isinstance(node, (ast.Tuple, ast.List, ast.Set))
        and len(node.elts) > 1
        and isinstance(getattr(node, "ctx", ast.Load()), ast.Load)
        and not any(isinstance(e, ast.Starred) for e in node.elts)
    ):
        for i in range(len(node.elts)):
            elts = node.elts[:i] + node.elts[i + 1 :]
            kind = type(node)
            new = ast.Set(elts) if kind is ast.Set else kind(elts, ast.Load())  # type: ignore[call-arg]
            found.append((new, f"element {i} left out"))
    return found


def mutants_of(module: str, source: str) -> list[Mutant]:
    """Every mutant this driver makes of *module*'s *source*, in source order."""
    tree = ast.parse(source)
    skipped = _skipped(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped or not hasattr(node, "end_col_offset"):
            continue
        variants = _variants(node)
        where = node
        if isinstance(node, ast.If):  # the check dropped: its test never holds
            variants = [(ast.Constant(value=False), "if-check dropped")]
            where = node.test
        span = (where.lineno, where.col_offset, where.end_lineno, where.end_col_offset)
        for new, what in variants:
            text = ast.unparse(new)
            found.append(Mutant(module, where.lineno, span, f"({text})", what))  # type: ignore[arg-type]
    return sorted(found, key=lambda m: (m.span, m.replacement))


def sample(root: Path, seed: int = SEED, per_module: int = PER_MODULE) -> list[Mutant]:
    """The fixed sample: *per_module* mutants of each module, drawn with *seed*."""
    chosen = []
    for module in MODULES:
        every = mutants_of(module, _module_path(root, module).read_text(encoding="utf-8"))
        rng = random.Random(f"{seed}:{module}")  # noqa: S311 - a reproducible sample, not a secret
        chosen += sorted(rng.sample(every, min(per_module, len(every))), key=lambda m: m.span)
    return chosen


def _module_path(root: Path, module: str) -> Path:
    """``_cache``: ``src/attn/registry/_cache.py``; else under src/attn (``cli/doctor``)."""
    core = root / "src" / "attn" / "registry" / f"{module}.py"
    return core if core.exists() else root / "src" / "attn" / f"{module}.py"


def copy_repository(into: Path, source: Path = ROOT) -> Path:
    """A copy of *source*'s code and tests, without caches, for mutants to edit."""
    target = into / "repo"
    ignore = shutil.ignore_patterns(".*", "__pycache__", "*.egg-info", "site", "dist", "build")
    for name in ("src", "tests", "docs", "plugins_example"):
        shutil.copytree(source / name, target / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "mkdocs.yml"):
        shutil.copy2(source / name, target / name)
    return target


def run_tests(root: Path, tests: tuple[str, ...], timeout: int = TIMEOUT) -> bool:
    """Whether the *tests* pass against *root*'s sources (``False`` on a timeout too)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "_ATTN_"))}
    env.update(PYTHONPATH=str(root / "src"), PYTHONDONTWRITEBYTECODE="1")
    # A mutant has the size and modification time of the original (so the cache's racy
    # check stays quiet): a .pyc that a subprocess (python -I) wrote must not serve it.
    for cache in (root / "src").rglob("__pycache__"):
        shutil.rmtree(cache)
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    try:
        done = subprocess.run(
            [*command, *(f"tests/{t}" for t in tests)],
            cwd=root,
            env=env,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def killed(root: Path, mutant: Mutant, tests: tuple[str, ...] | None = None) -> bool:
    """Apply *mutant* to *root*, run its module's tests, restore the file; whether they failed."""
    path = _module_path(root, mutant.module)
    original = path.read_text(encoding="utf-8")
    stat = path.stat()
    try:
        path.write_text(mutant.apply(original), encoding="utf-8")
        # The original's time: the cache's racy check on attn's own modules stays quiet.
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return not run_tests(root, tests or MODULES[mutant.module])
    finally:
        path.write_text(original, encoding="utf-8")
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _table(results: dict[str, list[bool]]) -> str:
    rows = ["| module | killed | score |", "| --- | ---: | ---: |"]
    for module, outcomes in results.items():
        rows.append(f"| {module}.py | {sum(outcomes)}/{len(outcomes)} | {_percent(outcomes)} |")
    every = [o for outcomes in results.values() for o in outcomes]
    rows.append(f"| all | {sum(every)}/{len(every)} | {_percent(every)} |")
    return "\n".join(rows)


def _percent(outcomes: list[bool]) -> str:
    return f"{100 * sum(outcomes) / len(outcomes):.0f} %" if outcomes else "-"


def main(argv: list[str] | None = None) -> int:
    """Run the sample (or ``--list`` it) and print the score per module."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--per-module", type=int, default=PER_MODULE)
    parser.add_argument("--modules", default=",".join(MODULES), help="comma-separated")
    parser.add_argument("--list", action="store_true", help="print the sample and stop")
    parser.add_argument("--repository", type=Path, default=ROOT, help="the code to mutate")
    args = parser.parse_args(argv)
    modules = args.modules.split(",")
    chosen = [m for m in sample(args.repository, args.seed, args.per_module) if m.module in modules]
    if args.list:
        for m in chosen:
            print(f"{m.module}.py:{m.line}: {m.what}: {m.replacement}")  # noqa: T201
        return 0
    with tempfile.TemporaryDirectory(prefix="attn-mutants-") as tmp:
        root = copy_repository(Path(tmp), args.repository)
        for module in modules:
            if not run_tests(root, MODULES[module]):
                print(f"the tests of {module} fail without any mutant", file=sys.stderr)  # noqa: T201
                return 2
        results: dict[str, list[bool]] = {m: [] for m in modules}
        for number, mutant in enumerate(chosen, 1):
            start = time.monotonic()
            result = killed(root, mutant)
            results[mutant.module].append(result)
            verdict = "killed" if result else "SURVIVED"
            print(  # noqa: T201
                f"[{number}/{len(chosen)}] {verdict} {mutant.module}.py:{mutant.line} "
                f"{mutant.what}: {mutant.replacement} ({time.monotonic() - start:.0f} s)",
                flush=True,
            )
    print(_table(results))  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
