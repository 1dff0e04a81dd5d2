"""The version check: a plugin's Requires-Dist on the host, decided by packaging."""

from __future__ import annotations

import json
import sys

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import attn
from attn.registry import _findings
from attn.registry._findings import Failure, HostRequirement, check_host_requirement
from attn.registry.codes import Code
from attn.registry.errors import RejectedPluginWarning

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
MAJOR = sys.version_info.major
BAD = "attn ===0.1.0,~=01"


@pytest.mark.parametrize(
    ("installed", "requirement"),
    [
        ("0.1.0", "attn>=0.1"),
        ("0.1.0", "attn"),
        ("0.1.0", "attn>=0.1,<1"),
        ("0.1.0", "ATTN>=0.1"),
        ("0.1.0", " attn"),
        ("0.1.0", "attn~=0.1"),
        ("0.1.0", "attn ==0.1.*"),
        ("0.1.0", "attn===0.1.0"),
        ("0.1.0", "attn>=0.1,"),
        ("1.0.post1", "attn>=1.0"),
        ("1.0", "attn==1.0.0"),
        (None, "attn"),
        ("not-a-version", "attn"),
        pytest.param("1.0rc1", "attn>=0.5", id="pre-release-above"),
        pytest.param("0.2.dev0", "attn>=0.1", id="dev-release-above"),
        pytest.param("1.0.dev0", "attn>=1.0.dev0", id="dev-release-floor"),
        pytest.param("0.1.0", "attn (>=0.1)", id="parenthesised"),
        pytest.param("0.3.0", "attn (>=0.1,<2)", id="parenthesised-two-clauses"),
        pytest.param("0.1.0", "attn[gpu]>=0.1", id="extra"),
        pytest.param("0.1.0", "attn [gpu, cpu] (==0.1.*)", id="extras-parenthesised"),
        pytest.param("0.1.0", "attn @ https://example.org/attn-0.1.0.tar.gz", id="url"),
        pytest.param("0.1.0", f"attn>=9; python_version < '{MAJOR}'", id="marker-not-applying"),
        pytest.param("0.1.0", "attn>=9; extra == 'host'", id="marker-only-an-extra"),
        pytest.param("0.1.0", f"attn>=0.1; python_version >= '{PY}'", id="marker-applying"),
    ],
)
def test_satisfied(installed, requirement):
    """The installed host satisfies the requirement: declared, no code, no reason."""
    verdict = check_host_requirement([requirement, "numpy>=1"], "attn", installed)
    assert verdict == HostRequirement("attn", installed, (requirement,))
    assert (bool(verdict.requirements), verdict.code, verdict.reason) == (True, None, None)


@pytest.mark.parametrize(
    ("installed", "requirement", "reason"),
    [
        ("0.1.0", "attn>=9.0", "requires attn>=9.0, installed 0.1.0"),
        ("0.1.0", "attn<0.1", "requires attn<0.1, installed 0.1.0"),
        ("0.1.0", "attn>=0.1,<0.1.0", "requires attn<0.1.0,>=0.1, installed 0.1.0"),
        ("0.1.0", "Attn>=2", "requires attn>=2, installed 0.1.0"),
        ("0.1.0", "attn\t>=2", "requires attn>=2, installed 0.1.0"),
        ("0.1.0", "attn!=0.1", "requires attn!=0.1, installed 0.1.0"),
        ("0.1.0", "attn~=0.1.2", "requires attn~=0.1.2, installed 0.1.0"),
        ("1.0+local", "attn==1.0+other", "requires attn==1.0+other, installed 1.0+local"),
        pytest.param("1.0rc1", "attn>=1.0", "requires attn>=1.0, installed 1.0rc1", id="pre"),
        pytest.param("0.2.dev0", "attn>=0.2", "requires attn>=0.2, installed 0.2.dev0", id="dev"),
        pytest.param("0.1.0", "attn(>=2)", "requires attn>=2, installed 0.1.0", id="paren"),
        pytest.param(
            "2.0", "attn (>=0.1,<2)", "requires attn<2,>=0.1, installed 2.0", id="paren-clauses"
        ),
        pytest.param("0.1.0", "attn[gpu]>=2", "requires attn>=2, installed 0.1.0", id="extra"),
        pytest.param(
            "0.1.0",
            f"attn>=2; python_version == '{PY}'",
            "requires attn>=2, installed 0.1.0",
            id="marker-applying",
        ),
        pytest.param(
            "0.1.0",
            "attn>=2;python_version>'2'",
            "requires attn>=2, installed 0.1.0",
            id="marker-without-spaces",
        ),
    ],
)
def test_unmet(installed, requirement, reason):
    """A requirement the installed host misses is unmet, with the design's wording."""
    verdict = check_host_requirement([requirement], "attn", installed)
    assert [(f.code, f.requirement) for f in verdict.failures] == [
        (Code.REQUIREMENT_UNMET, requirement)
    ]
    assert verdict.reason == reason


@pytest.mark.parametrize(
    ("requirement", "reason"),
    [
        ("attn>=0.1", "requires attn>=0.1, but attn is not installed"),
        ("attn (>=0.1,<2)", "requires attn<2,>=0.1, but attn is not installed"),
    ],
)
def test_host_not_installed(requirement, reason):
    """A versioned requirement on a host that is not installed fails, saying so."""
    verdict = check_host_requirement([requirement], "attn", None)
    assert (verdict.code, verdict.reason) == (Code.HOST_NOT_INSTALLED, reason)


def test_host_version_not_pep440():
    """A host version packaging cannot parse fails every versioned requirement, with its message."""
    verdict = check_host_requirement(["attn>=0.1"], "attn", "not-a-version")
    assert verdict.failures == (
        Failure(Code.REQUIREMENT_UNMET, "attn>=0.1", ">=0.1", "Invalid version: 'not-a-version'"),
    )
    assert verdict.reason == (
        "requires attn>=0.1, installed not-a-version (Invalid version: 'not-a-version')"
    )


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        pytest.param(BAD, "Invalid specifier: '~=01'", id="invalid-specifier"),
        pytest.param("attn @ ", "Expected URL after @", id="url-missing"),
        pytest.param(
            "attn; sys_platform < 1", "Expected a marker variable or quoted string", id="marker"
        ),
        pytest.param(
            "attn>=1; python_version ~= 'abc'",
            f"Undefined <Op('~=')> on '{PY}' and 'abc'.",
            id="marker-unevaluable",
        ),
    ],
)
def test_invalid_requirement(requirement, message):
    """A requirement packaging cannot parse or evaluate is invalid, with packaging's message."""
    verdict = check_host_requirement([requirement], "attn", "0.1.0")
    assert verdict == HostRequirement(
        "attn",
        "0.1.0",
        (requirement,),
        (Failure(Code.INVALID_REQUIREMENT, requirement, error=message),),
    )
    assert verdict.reason == f"has an invalid requirement {requirement!r} ({message})"


@pytest.mark.parametrize(
    "requirement",
    [
        "attn>>0.1",
        "attn~=1",
        "attn (>=1",
        "attn[gpu",
        "attn>=1,~=2",
        "attn>=1.0+local",
        # Variables of lock files, not of metadata: packaging 22 cannot parse them, 25 and later
        # cannot evaluate them here (a KeyError, not a ValueError).
        'attn; "x" in dependency_groups',
        'attn>=0.1; "gpu" in extras',
        # Blanks packaging does not accept, and a name packaging stops reading at the ".".
        "attn>=0.1\xa0",
        "attn>=0.1\x0b",
        "attn>=0.1,\n  <1",
        "attn\n\t>=9",
        "\nattn>=0.1",
        "attn.>=9",
    ],
)
def test_invalid_on_every_packaging_release(requirement):
    """Lines every packaging release refuses (in its own words, on one line) are invalid."""
    verdict = check_host_requirement([requirement], "attn", "0.1.0")
    assert verdict.code is Code.INVALID_REQUIREMENT
    assert verdict.reason is not None
    assert verdict.reason.startswith(f"has an invalid requirement {requirement!r} (")
    assert "\n" not in verdict.reason


@pytest.mark.parametrize(
    ("requires", "code", "reason"),
    [
        pytest.param(
            ["attn>=9.0", "attn<0.0.1"],
            Code.REQUIREMENT_UNMET,
            "requires attn>=9.0, installed 0.1.0; requires attn<0.0.1, installed 0.1.0",
            id="both-unmet",
        ),
        pytest.param(
            [f"attn>=9.0; python_version < '{MAJOR}'", "attn>=0.1"], None, None, id="one-applies"
        ),
        pytest.param(
            ["attn>=0.1", "attn>=9.0"],
            Code.REQUIREMENT_UNMET,
            "requires attn>=9.0, installed 0.1.0",
            id="one-unmet",
        ),
        pytest.param(
            [BAD, "attn>=9.0"],
            Code.REQUIREMENT_UNMET,
            "requires attn>=9.0, installed 0.1.0",
            id="unmet-outranks-invalid",
        ),
        pytest.param(
            ["attn>=0.1", BAD, "attn @ "],
            Code.INVALID_REQUIREMENT,
            f"has an invalid requirement {BAD!r} (Invalid specifier: '~=01'); "
            "has an invalid requirement 'attn @ ' (Expected URL after @)",
            id="both-invalid",
        ),
    ],
)
def test_several_lines_naming_the_host(requires, code, reason):
    """Every line naming the host is checked; unmet ones outrank unparseable ones."""
    verdict = check_host_requirement(["numpy", *requires], "attn", "0.1.0")
    assert verdict.requirements == tuple(requires)
    assert (verdict.code, verdict.reason) == (code, reason)


@pytest.mark.parametrize(
    "requires",
    [
        (),
        ("numpy>=1",),
        ("attn-extras>=1",),
        ("attnx",),
        ("attn_x>=1",),
        ("attn_>=9",),
        ("packaging; extra == 'attn'",),
        ("numpy>>1",),
    ],
)
def test_no_requirement_on_the_host(requires):
    """Requirements that do not name the host leave the plugin undeclared, not failing."""
    verdict = check_host_requirement(requires, "attn", "0.1.0")
    assert verdict == HostRequirement("attn", "0.1.0")
    assert not verdict.requirements


@pytest.mark.parametrize(
    ("line", "host"),
    [
        ("attn", "attn"),
        (" Attn>=1", "attn"),
        ("ATTN[x]", "attn"),
        ("attn_>=1", "attn"),
        ("attn-x", "attn"),
        ("attn;python_version>'3'", "attn"),
        ("attn@ https://example.org/a.whl", "attn"),
        ("My.Host>=2", "my-host"),
        ("my__host (>=2)", "my-host"),
        ("my-host-2", "my-host"),
        ("myhost", "my-host"),
    ],
)
def test_name_match_is_packaging_s(line, host):
    """A line packaging parses names the host exactly when packaging's canonical name is it."""
    names_host = canonicalize_name(Requirement(line).name) == host
    assert bool(check_host_requirement([line], host, "1.0").requirements) is names_host


def test_host_name_is_normalized():
    """The host is matched by canonical name on both sides, and named canonically."""
    verdict = check_host_requirement(["My.Host>=2"], "my_host", "1.0")
    assert verdict.reason == "requires my-host>=2, installed 1.0"


# -- through the public path: a plugin's metadata on sys.path -----------------------


def test_unparseable_requirement_leaves_builtins_working(site, run_discovery):
    """A plugin declaring ``attn ===0.1.0,~=01``: lookups work, its row is invalid."""
    site.dist(
        "bad-req", entry_points={"attn.backends": {"FLASH_ATTN": "plug.mod:B"}}, requires=[BAD]
    )
    builtin = attn.AttentionBackendEnum.FLASH_ATTN
    with pytest.warns(RejectedPluginWarning, match="'FLASH_ATTN' from bad-req 1.0"):
        assert attn.AttentionBackendEnum["FLASH_ATTN"] is builtin
    assert not builtin.is_overridden()
    (row,) = run_discovery().plugins
    assert (row.status, row.reason) == (
        "invalid",
        f"has an invalid requirement {BAD!r} (Invalid specifier: '~=01')",
    )


def test_unmet_and_unparseable_requirement_is_incompatible(site, run_discovery):
    """With one unmet and one unparseable requirement, the plugin is incompatible."""
    site.dist("two-reqs", entry_points={"attn.backends": {"X": "m:X"}}, requires=[BAD, "attn>=99"])
    (row,) = run_discovery().plugins
    assert (row.status, row.reason) == (
        "incompatible",
        f"requires attn>=99, installed {attn.__version__}",
    )


def test_doctor_reports_an_unparseable_requirement(site, python):
    """`attn doctor` names the plugin's bad requirement and its fix, and exits 1 (no traceback)."""
    site.dist(
        "bad-req", entry_points={"attn.backends": {"FLASH_ATTN": "plug.mod:B"}}, requires=[BAD]
    )
    done = python.run("-m", "attn", "doctor", "--json", check=False)
    assert (done.returncode, done.stderr) == (1, "")
    findings = json.loads(done.stdout)["findings"]
    (finding,) = (f for f in findings if f["kind"] == "invalid")
    assert finding["message"] == (
        f"bad-req 1.0 declares 'FLASH_ATTN' = 'plug.mod:B', but has an invalid requirement {BAD!r} "
        "(Invalid specifier: '~=01')"
    )
    assert finding["fix"] == (
        "fix the requirement on attn in bad-req's dependencies to a valid PEP 508 one and "
        "reinstall bad-req, or report it to its authors"
    )


COLD_SCRIPT = """
import sys
import attn
attn.AttentionBackendEnum["FLASH_ATTN"].get_path()
print("packaging" in sys.modules)
"""


@pytest.mark.parametrize(("requires", "imported"), [((), "False"), (("attn>=0.1",), "True")])
def test_packaging_is_imported_only_for_a_requirement_on_the_host(
    sites, python, requires, imported
):
    """A cold discovery whose plugins name no requirement on attn never imports packaging."""
    site = sites.new()
    site.dist("plug", entry_points={"attn.backends": {"OTHER": "plug.m:B"}}, requires=requires)
    done = python.run("-W", "ignore", "-c", COLD_SCRIPT)
    assert done.stdout.split()[-1] == imported


#: Entries naming the host, of every shape: those of name and clauses only take
#: SpecifierSet directly, the others Requirement; both must give one verdict.
SHAPES = (
    "attn",
    " attn ",
    "ATTN>=0.1",
    "attn>=0.1",
    "attn >= 0.1",
    "attn>=0.1,<1",
    "attn >=0.1 , <1",
    "attn>=0.1,",
    "attn,>=0.1",
    "attn>=0.1 <1",
    "attn==0.1.*",
    "attn==0.1.0+local",
    "attn!=0.1.0",
    "attn~=0.1",
    "attn===0.1.0",
    "attn===foo",
    "attn>=1!0.1",
    "attn>=0.1.dev0",
    "attn<0.2rc1",
    "attn>=0.1.*",
    "attn<=0.1+local",
    "attn~=1",
    "attn>>0.1",
    "attn=0.1",
    "attn>=",
    "attn 0.1",
    "attn (>=0.1)",
    "attn[gpu]>=0.1",
    "attn>=0.1; python_version > '3'",
    "attn>=0.1;python_version<'3'",
    "attn @ https://example.org/attn-0.1.0.tar.gz",
    BAD,
    "attn>=1,~=2",
    "attn>=1.0a1,<2.0b2",
    "attn!=0.1.0.post1",
    "attn==0.1.0rc1.post2.dev3+g1.abc",
    # Spellings packaging's SpecifierSet reads but some of its Requirement parsers refuse.
    "attn>=0.1.0alpha1",
    "attn<1.0beta2",
    "attn>=0.1.0preview1",
    "attn===0.1.0, >=0.1",
)


def test_most_shapes_take_the_short_way():
    """The comparison below covers the short way: most of its entries are name and clauses."""
    short = [line for line in SHAPES if _findings._CLAUSES_ONLY.fullmatch(line)]
    assert len(short) >= 20, short
    assert "attn>=0.1; python_version > '3'" not in short


@pytest.mark.parametrize("line", SHAPES)
@pytest.mark.parametrize("installed", ["0.1.0", "0.2rc1", "1.0", None, "not-a-version"])
def test_a_plain_entry_gets_the_verdict_requirement_gives(line, installed):
    """The short way for name-and-clauses entries agrees with packaging's Requirement."""
    assert _findings._failure(line, installed) == _findings._failure(line, installed, short=False)


@pytest.mark.parametrize(
    ("requires", "imported"),
    [(("attn>=0.1,<2",), "False"), (("attn>=0.1; python_version > '3'",), "True")],
)
def test_packaging_requirements_is_imported_for_markers_only(sites, python, requires, imported):
    """A requirement of version clauses only is checked without packaging.requirements."""
    site = sites.new()
    site.dist("plug", entry_points={"attn.backends": {"OTHER": "plug.m:B"}}, requires=requires)
    code = COLD_SCRIPT.replace('"packaging" in', '"packaging.requirements" in')
    assert python.run("-W", "ignore", "-c", code).stdout.split()[-1] == imported
