"""The version check: a plugin's Requires-Dist on the host against the installed host."""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest

from attn.registry import compat
from attn.registry._metadata import canonical_name
from attn.registry.compat import HostRequirement, check_host_requirement

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.mark.parametrize(
    ("host_version", "requirement"),
    [
        ("0.1.0", "attn>=0.1"),
        ("0.1.0", "attn"),
        ("0.1.0", "attn>=0.1,<1"),
        ("0.1.0", "ATTN>=0.1"),
        ("0.1.0", "attn (>=0.1)"),
        ("0.1.0", "attn~=0.1"),
        ("0.1.0", "attn[extra]>=0.1"),
        ("0.1.0", "attn ==0.1.*"),
        ("1.0rc1", "attn>=0.5"),
        ("0.2.dev0", "attn>=0.1"),
        ("1.0.dev0", "attn>=1.0.dev0"),
        ("1.0.post1", "attn>=1.0"),
        ("0.1.0", "attn @ https://example.org/attn-0.1.0.tar.gz"),
    ],
)
def test_satisfied(host_version, requirement):
    """The installed host satisfies the requirement (pre-releases and dev builds included)."""
    assert check_host_requirement([requirement], "attn", host_version) == HostRequirement(
        declared=True, requirements=(requirement,), problem=None
    )


@pytest.mark.parametrize(
    ("host_version", "requirement", "problem"),
    [
        ("0.1.0", "attn>=9.0", "requires attn>=9.0, installed 0.1.0"),
        ("1.0rc1", "attn>=1.0", "requires attn>=1.0, installed 1.0rc1"),
        ("0.2.dev0", "attn>=0.2", "requires attn>=0.2, installed 0.2.dev0"),
        ("0.1.0", "attn<0.1", "requires attn<0.1, installed 0.1.0"),
        ("0.1.0", "attn>=0.1,<0.1.0", "requires attn<0.1.0,>=0.1, installed 0.1.0"),
        ("0.1.0", "Attn>=2", "requires attn>=2, installed 0.1.0"),
        ("0.1.0", "attn\t>=2", "requires attn>=2, installed 0.1.0"),
        ("0.1.0", "attn(>=2)", "requires attn>=2, installed 0.1.0"),
        ("0.1.0", "attn>=2;python_version>'2'", "requires attn>=2, installed 0.1.0"),
    ],
)
def test_not_satisfied(host_version, requirement, problem):
    """A requirement the installed host misses gives its reason, like the design's example."""
    result = check_host_requirement([requirement], "attn", host_version)
    assert (result.declared, result.problem) == (True, problem)


def test_marker_that_excludes_the_requirement():
    """A requirement whose marker is false for this interpreter does not apply."""
    requirement = f"attn>=9.0; python_version < '{sys.version_info.major}'"
    result = check_host_requirement([requirement], "attn", "0.1.0")
    assert (result.declared, result.problem) == (True, None)


def test_marker_that_applies():
    """A requirement whose marker is true for this interpreter is checked."""
    requirement = f"attn>=9.0; python_version == '{PY}'"
    result = check_host_requirement([requirement], "attn", "0.1.0")
    assert result.problem == "requires attn>=9.0, installed 0.1.0"


def test_requirement_only_under_an_extra():
    """A requirement that only an extra brings in counts as declared but does not apply."""
    result = check_host_requirement(["attn>=9.0; extra == 'host'"], "attn", "0.1.0")
    assert (result.declared, result.problem) == (True, None)


def test_only_the_applicable_requirement_is_checked():
    """Of two requirements on the host, the one whose marker is false is ignored."""
    requires = [f"attn>=9.0; python_version < '{sys.version_info.major}'", "attn>=0.1"]
    result = check_host_requirement(requires, "attn", "0.1.0")
    assert result == HostRequirement(declared=True, requirements=tuple(requires), problem=None)


def test_every_failing_requirement_is_named():
    """Two applicable requirements that both fail are both named."""
    result = check_host_requirement(["attn>=9.0", "attn<0.0.1"], "attn", "0.1.0")
    assert result.problem == (
        "requires attn>=9.0, installed 0.1.0; requires attn<0.0.1, installed 0.1.0"
    )


@pytest.mark.parametrize(
    "requires",
    [
        (),
        ("numpy>=1",),
        ("attn-extras>=1",),
        ("attnx",),
        ("attn_x>=1",),
        ("packaging; extra == 'attn'",),
    ],
)
def test_no_requirement_on_the_host(requires):
    """Requirements that do not name the host leave the plugin undeclared, not incompatible."""
    assert check_host_requirement(requires, "attn", "0.1.0") == HostRequirement(
        declared=False, requirements=(), problem=None
    )


def test_host_not_installed():
    """A versioned requirement on a host that is not installed fails."""
    result = check_host_requirement(["attn>=0.1"], "attn", None)
    assert result.problem == "requires attn>=0.1, but attn is not installed"


def test_host_version_not_pep440():
    """A host version packaging cannot parse is reported, not raised."""
    result = check_host_requirement(["attn>=0.1"], "attn", "not-a-version")
    assert result.problem == "requires attn>=0.1, installed not-a-version is not a PEP 440 version"


def test_invalid_requirement_line():
    """A malformed Requires-Dist naming the host makes the plugin incompatible, with the line."""
    result = check_host_requirement(["attn>>0.1"], "attn", "0.1.0")
    assert result.declared
    assert result.problem.startswith("has an invalid requirement 'attn>>0.1' (")


def test_host_name_is_normalized():
    """The host is matched by canonical name on both sides."""
    result = check_host_requirement(["My.Host>=2"], "my_host", "1.0")
    assert result.problem == "requires my-host>=2, installed 1.0"


PLAIN_OR_NOT = [
    "attn",
    "attn>=0.1",
    "attn >= 0.1 , < 2",
    "attn (>=0.1,<2)",
    "attn[gpu]>=0.1",
    "attn [gpu, cpu] (==0.1.*)",
    "attn~=0.1",
    "attn===0.1.0",
    "attn!=0.1.0",
    "attn>=0.1,",
    "attn>=",
    "attn>=0.1 <2",
    "attn>=0.1;python_version>'3'",
    "attn>=9 ; python_version < '3'",
    "attn @ https://example.com/attn.whl",
    "attn>=foo",
    "attn==1.0+local",
    "attn<0.1.0rc1",
    "attn (>=0.1",
    "attn[gpu",
    "Attn_>=0.1",
]


@pytest.mark.parametrize("line", PLAIN_OR_NOT)
@pytest.mark.parametrize("installed", ["0.1.0", "1.0rc1", None, "not-a-version"])
def test_plain_requirements_get_packaging_s_verdict(monkeypatch, line, installed):
    """The quick path for marker-less requirements gives packaging.requirements' verdict."""
    monkeypatch.setattr(compat, "_VERDICTS", {})
    quick = check_host_requirement([line], "attn", installed)
    monkeypatch.setattr(compat, "_VERDICTS", {})
    monkeypatch.setattr(compat, "_plain_specifier", lambda _line: None)
    assert quick == check_host_requirement([line], "attn", installed)


# The host-name pre-filter as it was written with re; the hand-written one must agree.
_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


def _names_host_with_re(requirement, host):
    match = _NAME.match(requirement)
    return match is not None and canonical_name(match.group(1)) == host


def test_whitespace_is_what_re_takes_for_whitespace():
    """str.isspace, which the simple path skips, is exactly re's \\s, which packaging skips."""
    space = re.compile(r"\s")
    differ = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if chr(code).isspace() != bool(space.fullmatch(chr(code)))
    ]
    assert differ == []


def test_names_host_agrees_with_the_regex():
    """The hand-written pre-filter takes exactly the lines the regex did."""
    rng = random.Random(20261201)  # noqa: S311 - reproducible, not secret
    alphabet = "aAtTnNmMyYhHoOsS019._-  \t\u00a0\u200b[(>=;@é"
    lines = [
        "",
        " ",
        "attn",
        " attn",
        "attn_",
        "_attn",
        "attn-x",
        "a",
        "A.",
        "my_host",
        "My..Host>",
    ]
    lines += ["".join(rng.choices(alphabet, k=rng.randint(1, 9))) for _ in range(20000)]
    lines += [rng.choice(["attn", "my-host", " My.Host", "ATTN"]) + line for line in lines[:5000]]
    taken = 0
    for line in lines:
        for host in ("attn", "my-host", "a"):
            expected = _names_host_with_re(line, host)
            assert compat._names_host(line, host) == expected, (line, host)
            taken += expected
    assert taken > 2000


def _modules_after_check(requires):
    code = (
        "import sys\n"
        "from attn.registry.compat import check_host_requirement\n"
        f"print(check_host_requirement({requires!r}, 'attn', '0.1.0').problem)\n"
        "print('packaging.markers' in sys.modules, 'packaging.requirements' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.splitlines()


def test_version_check_without_markers_skips_packaging_markers():
    """Requirements without a marker are checked without importing packaging.markers."""
    assert _modules_after_check(["attn>=0.1", "numpy"]) == ["None", "False False"]


def test_version_check_with_a_marker_evaluates_it():
    """A requirement with a marker is parsed and evaluated by packaging."""
    assert _modules_after_check(["attn>=9; python_version > '3'"]) == [
        "requires attn>=9, installed 0.1.0",
        "True True",
    ]
