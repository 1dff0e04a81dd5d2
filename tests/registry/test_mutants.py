"""The mutation driver (tests/mutants.py, nox -s mutants) keeps working: its sample, two runs."""

from __future__ import annotations

import ast

import mutants


def test_the_sample_is_fixed_covers_every_module_and_changes_code():
    """The seeded sample is the same each time, at least 100 mutants, each a valid edit."""
    chosen = mutants.sample(mutants.ROOT)
    assert chosen == mutants.sample(mutants.ROOT)
    assert len(chosen) >= 100
    assert {m.module for m in chosen} == set(mutants.MODULES)
    for mutant in chosen:
        source = mutants._module_path(mutants.ROOT, mutant.module).read_text(encoding="utf-8")
        changed = mutant.apply(source)
        assert ast.dump(ast.parse(changed)) != ast.dump(ast.parse(source)), mutant


def test_a_caught_mutant_is_killed_an_unseen_one_survives_and_the_file_is_restored(tmp_path):
    """Two mutants of _findings.py against its tests: a real bug, and a change of nothing."""
    root = mutants.copy_repository(tmp_path)
    path = mutants._module_path(root, "_findings")
    source = path.read_text(encoding="utf-8")
    every = mutants.mutants_of("_findings", source)
    line = next(
        i for i, text in enumerate(source.splitlines(), 1) if "if installed is None:" in text
    )
    bug = next(m for m in every if m.line == line and m.what == "comparison swapped")
    same = mutants.Mutant("_findings", line, bug.span, "(installed is None)", "nothing changed")
    tests = ("registry/test_findings.py",)
    assert mutants.killed(root, bug, tests)
    assert not mutants.killed(root, same, tests)
    assert path.read_text(encoding="utf-8") == source
