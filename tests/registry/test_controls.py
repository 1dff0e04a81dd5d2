"""The ATTN_* variables: booleans, the distribution selection, and their errors."""

from __future__ import annotations

import shlex

import pytest

from attn import AttnError
from attn.registry import AttnConfigError
from attn.registry.controls import Controls, parse_bool, read_controls, reader, shell_word


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", "TRUE", "Yes", "oN", " 1 "])
def test_true_values(value):
    """1/true/yes/on, in any case, are true."""
    assert parse_bool("ATTN_STRICT", value) is True


@pytest.mark.parametrize("value", ["0", "false", "no", "off", "", "FALSE", "No", "OFF", "  "])
def test_false_values(value):
    """0/false/no/off and empty, in any case, are false."""
    assert parse_bool("ATTN_STRICT", value) is False


def test_unset_is_false():
    """An unset boolean variable is false."""
    assert parse_bool("ATTN_STRICT", None) is False


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ATTN_STRICT", "2"),
        ("ATTN_STRICT", "enable"),
        ("ATTN_DISABLE_PLUGINS", "y"),
        ("ATTN_DISABLE_PLUGINS", "-1"),
    ],
)
def test_other_values_are_an_error_naming_the_variable(variable, value):
    """Anything else raises an AttnConfigError (a ValueError) naming the variable and value."""
    with pytest.raises(AttnConfigError) as info:
        parse_bool(variable, value)
    assert str(info.value) == (
        f"Invalid value for {variable}: {value!r}; "
        "expected one of 1, true, yes, on, 0, false, no, off"
    )
    assert isinstance(info.value, AttnError)
    assert isinstance(info.value, ValueError)
    assert (info.value.variable, info.value.value) == (variable, value)


def test_nothing_set():
    """With no variable set, plugins are enabled, unselected and not strict."""
    assert read_controls("ATTN", {}) == Controls(
        prefix="ATTN",
        disable_plugins=False,
        only=None,
        only_as_written=(),
        strict=False,
        no_cache=False,
        reader=reader("ATTN", {}),  # "reference" on a Python the tests have not seen
    )


def test_the_cache_and_reader_switches():
    """``<PREFIX>_NO_CACHE`` and ``<PREFIX>_READER`` are read once, with the other controls."""
    controls = read_controls("HOST", {"HOST_NO_CACHE": "yes", "HOST_READER": " Reference "})
    assert (controls.no_cache, controls.reader) == (True, "reference")
    assert read_controls("HOST", {"ATTN_NO_CACHE": "1"}).no_cache is False


@pytest.mark.parametrize(
    ("value", "only", "written"),
    [
        ("attn-plugin", ("attn-plugin",), ("attn-plugin",)),
        ("Attn_Plugin", ("attn-plugin",), ("Attn_Plugin",)),
        ("a.b , C__D", ("a-b", "c-d"), ("a.b", "C__D")),
        ("a,,b,", ("a", "b"), ("a", "b")),
        ("a,A, a ", ("a",), ("a", "A", "a")),
    ],
)
def test_selection_is_normalized_as_pip_does(value, only, written):
    """ATTN_PLUGINS is split on commas and each name normalized as pip does."""
    controls = read_controls("ATTN", {"ATTN_PLUGINS": value})
    assert (controls.only, controls.only_as_written) == (only, written)


@pytest.mark.parametrize("value", ["", " ", ",", " , "])
def test_empty_selection_is_unset(value):
    """An empty ATTN_PLUGINS is the same as unset."""
    controls = read_controls("ATTN", {"ATTN_PLUGINS": value})
    assert controls.only is None
    assert controls.selects("anything")


@pytest.mark.parametrize(
    ("distribution", "allowed"),
    [("Attn-Plugin", True), ("attn.plugin", True), ("attn_plugin", True), ("other", False)],
)
def test_selects_matches_normalized_names(distribution, allowed):
    """A selection selects a distribution whatever the spelling of its name."""
    controls = read_controls("ATTN", {"ATTN_PLUGINS": "ATTN_PLUGIN"})
    assert controls.selects(distribution) is allowed


@pytest.mark.parametrize(
    ("value", "block", "written"),
    [
        ("", (), ()),
        ("Attn_Plugin", ("attn-plugin",), ("Attn_Plugin",)),
        ("a.b , C__D,,", ("a-b", "c-d"), ("a.b", "C__D")),
    ],
)
def test_block_list_is_normalized_as_pip_does(value, block, written):
    """ATTN_BLOCK_PLUGINS is split on commas and each name normalized as pip does."""
    controls = read_controls("ATTN", {"ATTN_BLOCK_PLUGINS": value})
    assert (controls.block, controls.block_as_written) == (block, written)


@pytest.mark.parametrize(
    ("distribution", "allowed"),
    [("attn.plugin", False), ("other", True), ("third", False)],
)
def test_a_blocked_distribution_is_never_allowed(distribution, allowed):
    """A distribution in ATTN_BLOCK_PLUGINS is not allowed, even when ATTN_PLUGINS names it."""
    environ = {"ATTN_PLUGINS": "attn-plugin,other", "ATTN_BLOCK_PLUGINS": "Attn_Plugin"}
    controls = read_controls("ATTN", environ)
    assert (controls.selects(distribution) and not controls.blocks(distribution)) is allowed


def test_booleans_are_read():
    """ATTN_DISABLE_PLUGINS and ATTN_STRICT are read as booleans."""
    controls = read_controls("ATTN", {"ATTN_DISABLE_PLUGINS": "yes", "ATTN_STRICT": "On"})
    assert (controls.disable_plugins, controls.strict) == (True, True)


def test_variables_follow_the_prefix():
    """Another host's registry reads its own variables."""
    controls = read_controls("TOY", {"TOY_STRICT": "1", "ATTN_STRICT": "bogus"})
    assert controls.strict
    names = (
        controls.disable_variable,
        controls.plugins_variable,
        controls.prefer_variable,
        controls.block_variable,
        controls.strict_variable,
        controls.no_cache_variable,
    )
    assert names == (
        "TOY_DISABLE_PLUGINS",
        "TOY_PLUGINS",
        "TOY_PREFER",
        "TOY_BLOCK_PLUGINS",
        "TOY_STRICT",
        "TOY_NO_CACHE",
    )


def test_reads_the_environment_by_default(monkeypatch):
    """Without a mapping, the process environment is read."""
    monkeypatch.setenv("ATTN_DISABLE_PLUGINS", "1")
    assert read_controls("ATTN").disable_plugins


def test_a_suggested_value_is_quoted_only_where_a_shell_would_change_it():
    """A fix's ``export VARIABLE=value`` pastes into a shell as is: quoted for a space."""
    plain = read_controls("ATTN", {"ATTN_PREFER": "beta", "ATTN_BLOCK_PLUGINS": "x"})
    assert plain.adding("zed", prefer=True) == "export ATTN_PREFER=beta,zed"
    assert plain.adding("zed") == "export ATTN_BLOCK_PLUGINS=x,zed"
    spaced = {"ATTN_PREFER": "beta alpha", "ATTN_BLOCK_PLUGINS": "x y, plug", "ATTN_PLUGINS": "a b"}
    controls = read_controls("ATTN", spaced)
    assert controls.adding("zed", prefer=True) == "export ATTN_PREFER='beta alpha,zed'"
    assert controls.adding("zed") == "export ATTN_BLOCK_PLUGINS='x y,plug,zed'"
    assert controls.letting_in("plug") == (
        "export ATTN_BLOCK_PLUGINS='x y' and export ATTN_PLUGINS='a b,plug'"
    )


@pytest.mark.parametrize(
    "text",
    ["beta,zed", "a=b:c/d@e%f+g.h", "a b", "it's", "x$y", '"q"', "a\nb", "*", "x?", "[9,0]", "~"],
)
def test_a_word_is_quoted_as_shlex_quotes_it(text):
    """Brackets too: zsh, or bash with failglob, stops at a pattern that matches no file."""
    assert shell_word(text) == shlex.quote(text)
    assert shlex.split(shell_word(text)) == [text]
