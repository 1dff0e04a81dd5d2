"""The version check: a plugin's Requires-Dist on the host against the installed host."""

from __future__ import annotations

import itertools
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
    """The quick paths for marker-less requirements give packaging.requirements' verdict."""
    monkeypatch.setattr(compat, "_VERDICTS", {})
    quick = check_host_requirement([line], "attn", installed)
    monkeypatch.setattr(compat, "_VERDICTS", {})
    monkeypatch.setattr(compat, "_simple_clauses", lambda _line, _host: None)
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


def _verdicts(lines, host, installed):
    """The simple path's verdict (``None`` when it does not answer) and packaging's."""
    naming = tuple(line for line in lines if compat._names_host(line, host))
    if not naming:
        return None, None
    return (
        compat._simple_verdict(naming, host, installed),
        compat._packaging_verdict(naming, host, installed),
    )


# Spellings of the two hosts the corpus uses, and names that only start like them
# (the pre-filter takes them; neither path may read them as the host).
SPELLINGS = {
    "attn": ["attn", "Attn", "ATTN", "aTtN", "attn_", "attn.", "attn-", "Attn._"],
    "my-host": ["my-host", "My.Host", "my_host", "MY--HOST", "my._-host", "My_Host-"],
}
SPACES = [""] * 30 + [" "] * 10 + ["  ", "\t", "\u00a0", " \u2003", "\n", "\u200b"]
OPERATORS = ["~=", "==", "!=", "<=", ">=", "<", ">", "===", "=", "<>", "=>"]
NUMBERS = ["0", "0", "1", "1", "2", "2", "10", "3", "00", "01", "002"]
SUFFIXES = [".*", "rc1", "a0", ".post1", ".dev0", "+local", "-1", ".", ".x", "", "1!", "v"]
# Installed versions: plain releases (and no host at all), then the others.
RELEASES = ["0.1", "0.1.0", "1", "2.0.0.0", "10.2", "0", "0.0", "1.0", "1.1", "1.2.3", "2"]
RELEASES += ["3.0", "01.2", "0.1.1", "10.0.1", "00", None, None]
OTHERS = ["1.0rc1", "0.2.dev0", "1.0.post1", "1.0+local", "not-a-version", "v1.0", " 1.0"]
OTHERS += ["1!1.0"]
INSTALLED = RELEASES + OTHERS


def _version(rng):
    numbers = ".".join(rng.choices(NUMBERS, k=rng.randint(1, 4)))
    if rng.random() < 0.05:
        suffix = rng.choice(SUFFIXES)
        return suffix + numbers if suffix in ("1!", "v") else numbers + suffix
    return numbers


def _line(rng, host):
    space = lambda: rng.choice(SPACES)  # noqa: E731 - a short local helper
    clauses = [
        space() + rng.choices(OPERATORS, weights=[12] * 7 + [1] * 4)[0] + space() + _version(rng)
        for _ in range(rng.choices([0, 1, 2, 3], weights=[1, 6, 6, 3])[0])
    ]
    if len(clauses) > 1 and rng.random() < 0.1:
        clauses.append(clauses[0] + rng.choice(["", ".0"]))  # a clause again, maybe padded
    specifier = ",".join(space() + clause + space() for clause in clauses)
    if rng.random() < 0.03:
        specifier += ","
    if clauses and rng.random() < 0.3:
        specifier = "(" + specifier + rng.choice([")", ")", ")", ""])
    weights = [12, 4, 4, 4] + [1] * (len(SPELLINGS[host]) - 4)
    name = rng.choices(SPELLINGS[host], weights=weights)[0]
    tail = rng.choices(["", " ; python_version > '3'", "[x]", " @ u"], weights=[30, 1, 1, 1])[0]
    return space() + name + space() + specifier + space() + tail


def _corpus():
    rng = random.Random(20261201)  # noqa: S311 - reproducible, not secret
    for _ in range(8000):
        host = rng.choice(["attn", "attn", "my-host"])
        lines = [_line(rng, host) for _ in range(rng.choices([1, 2], weights=[4, 1])[0])]
        yield lines, host, rng.choice(RELEASES if rng.random() < 0.8 else INSTALLED)
    for line in PLAIN_OR_NOT:
        for installed in INSTALLED:
            yield [line], "attn", installed


def test_simple_path_agrees_with_packaging_on_a_corpus():
    """Wherever the simple path answers, its verdict and wording are packaging's."""
    answered = {"attn": 0, "my-host": 0}
    satisfied = failed_several = not_installed = 0
    for lines, host, installed in _corpus():
        simple, full = _verdicts(lines, host, installed)
        if simple is None:
            continue
        assert simple == full, (lines, host, installed)
        answered[host] += 1
        satisfied += simple.problem is None
        failed_several += simple.problem is not None and "," in simple.problem
        not_installed += simple.problem is not None and installed is None
    # Not vacuous: thousands answered, for both hosts, both ways, several clauses included.
    assert answered["attn"] > 1500
    assert answered["my-host"] > 800
    assert satisfied > 800
    assert failed_several > 1500
    assert not_installed > 200


def test_simple_path_agrees_with_packaging_on_every_small_release():
    """Every operator, against every release of up to three small numbers, both ways."""
    releases = [
        ".".join(numbers)
        for size in (1, 2, 3)
        for numbers in itertools.product(["0", "1", "2"], repeat=size)
    ] + ["01", "1.00", "10"]
    answered = 0
    for operator, version, installed in itertools.product(
        ["~=", "==", "!=", "<=", ">=", "<", ">"], releases, releases
    ):
        line = f"attn{operator}{version}"
        simple, full = _verdicts([line], "attn", installed)
        if operator == "~=" and "." not in version:
            assert simple is None
            continue
        assert simple == full, (line, installed)
        answered += 1
    single = sum("." not in release for release in releases)
    assert answered == (7 * len(releases) - single) * len(releases)


@pytest.mark.parametrize(
    ("line", "installed", "problem"),
    [
        ("attn>=0.1", "0.1.0", None),
        ("attn>=0.1", None, "requires attn>=0.1, but attn is not installed"),
        ("attn", None, None),
        ("attn", "1.0rc1", None),
        (" attn ", "0.1", None),
        ("attn (>=0.1,<2)", "0.3.0", None),
        ("attn (>=0.1,<2)", "2.0", "requires attn<2,>=0.1, installed 2.0"),
        ("attn >= 0.1 , < 2", "2", "requires attn<2,>=0.1, installed 2"),
        ("attn(>=2)", "0.1.0", "requires attn>=2, installed 0.1.0"),
        ("ATTN\t>=2", "0.1.0", "requires attn>=2, installed 0.1.0"),
        ("attn~=0.1.2", "0.1.9", None),
        ("attn~=0.1.2", "0.2", "requires attn~=0.1.2, installed 0.2"),
        ("attn~=0.1.2", "0.1.1", "requires attn~=0.1.2, installed 0.1.1"),
        ("attn~=1.0", "1", None),
        ("attn~=1.0.0", "1", None),
        ("attn==1.0", "1.0.0", None),
        ("attn!=1", "1.0.0.0", "requires attn!=1, installed 1.0.0.0"),
        ("attn<1.0", "1", "requires attn<1.0, installed 1"),
        ("attn>1.0", "1.0.0", "requires attn>1.0, installed 1.0.0"),
        ("attn>=01.02", "1.2", None),
        ("attn<=1.0,>=0.01,!=0.5", "0.5.0", "requires attn!=0.5,<=1.0,>=0.01, installed 0.5.0"),
        ("attn>=0.1, >=0.2", "0.1", "requires attn>=0.1,>=0.2, installed 0.1"),
    ],
)
def test_simple_requirements_are_answered_without_packaging(line, installed, problem):
    """The usual requirements are answered by the simple path, as packaging answers them."""
    simple, full = _verdicts([line], "attn", installed)
    assert simple == full
    assert simple == HostRequirement(declared=True, requirements=(line,), problem=problem)


@pytest.mark.parametrize(
    ("line", "installed"),
    [
        ("attn>=0.1,>=0.1.0", "0.1"),  # equal clauses: packaging keeps one
        ("attn>=0.1,>=0.1", "0.1"),
        ("attn~=1", "1"),  # packaging's problem to word
        ("attn===1.0", "1.0"),
        ("attn==1.*", "1.0"),
        ("attn>=0.1,", "1.0"),
        ("attn>=", "1.0"),
        ("attn>=1.0rc1", "1.0"),
        ("attn>=1.0.post1", "1.0"),
        ("attn==1.0+local", "1.0"),
        ("attn>=v1", "1.0"),
        ("attn>=1!1.0", "1.0"),
        ("attn[x]>=1", "1.0"),
        ("attn>=1;python_version>'3'", "1.0"),
        ("attn @ https://example.org/attn.whl", "1.0"),
        ("attn_>=0.1", "1.0"),
        ("attn (>=0.1", "1.0"),
        ("attn ()", "1.0"),
        ("attn>=0.1 <2", "1.0"),
        ("attn>=0.1", "1.0rc1"),  # the installed host is not a plain release
        ("attn>=0.1", "1.0+local"),
        ("attn>=0.1", "not-a-version"),
        ("attn>=0.1", " 1.0"),
        ("attn>=1.\u0662", "1.0"),  # digits, but not ASCII ones
        ("attn>=1.0", "\u0661.0"),
    ],
)
def test_other_requirements_go_to_packaging(line, installed):
    """Anything but a plain release requirement on a plain release is left to packaging."""
    assert _verdicts([line], "attn", installed)[0] is None


def test_one_line_packaging_must_check_sends_them_all():
    """A list with one line the simple path cannot answer is answered by packaging."""
    assert _verdicts(["attn>=0.1", "attn>=1.0rc1"], "attn", "1.0")[0] is None


def _modules_after_check(requires):
    code = (
        "import sys\n"
        "from attn.registry.compat import check_host_requirement\n"
        f"print(check_host_requirement({requires!r}, 'attn', '0.1.0').problem)\n"
        "names = ('packaging', 'packaging.markers', 'packaging.requirements', 're', 'typing')\n"
        "print(' '.join(name for name in names if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.splitlines()


def test_simple_version_check_imports_no_packaging():
    """A cold check of simple requirements imports no packaging."""
    lines = _modules_after_check(["attn>=0.1", "numpy>=1.21"])
    assert lines[0] == "None"
    assert not {"packaging", "packaging.markers", "packaging.requirements"} & set(lines[1].split())


def test_version_check_without_markers_skips_packaging_markers():
    """Requirements without a marker that packaging must check skip packaging.markers."""
    lines = _modules_after_check(["attn>=0.1.0rc1", "numpy"])
    assert lines[0] == "None"
    assert set(lines[1].split()) >= {"packaging", "re"}
    assert not {"packaging.markers", "packaging.requirements"} & set(lines[1].split())


def test_version_check_with_a_marker_evaluates_it():
    """A requirement with a marker is parsed and evaluated by packaging."""
    lines = _modules_after_check(["attn>=9; python_version > '3'"])
    assert lines[0] == "requires attn>=9, installed 0.1.0"
    assert {"packaging.markers", "packaging.requirements"} <= set(lines[1].split())
