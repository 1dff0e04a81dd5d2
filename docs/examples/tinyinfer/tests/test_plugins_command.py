"""tinyinfer's own tests of its ``tinyinfer plugins`` command, with attn's testing kit."""

import json
import subprocess

from tinyinfer import SamplerEnum

from attn.testing import AttnPlugins

TURBO = '''
from tinyinfer import Sampler


class TurboSampler(Sampler):
    """A plugin's sampler."""
'''


def tinyinfer(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed console script."""
    return subprocess.run(["tinyinfer", *args], capture_output=True, text=True, check=False)


def test_plugins_list_shows_a_plugin_that_overrides_and_adds(attn_plugins: AttnPlugins) -> None:
    samplers = {"GREEDY": "tinyinfer_turbo:TurboSampler", "TURBO": "tinyinfer_turbo:TurboSampler"}
    attn_plugins.add(
        "tinyinfer-turbo",
        {"tinyinfer.samplers": samplers},
        requires=("tinyinfer>=1.0",),
        files={"tinyinfer_turbo.py": TURBO},
    )
    assert SamplerEnum.lookup("TURBO").get_class().__name__ == "TurboSampler"
    done = tinyinfer("plugins", "list", "--json")
    assert done.returncode == 0, done.stderr
    (listed,) = json.loads(done.stdout)["registries"]
    assert [(b["name"], b["origin"]) for b in listed["backends"]] == [
        ("GREEDY", "plugin"),
        ("TOP_K", "builtin"),
        ("TURBO", "plugin"),
    ]


def test_plugins_doctor_checks_tinyinfers_plugins_only(attn_plugins: AttnPlugins) -> None:
    done = tinyinfer("plugins", "doctor")
    assert done.returncode == 0, done.stdout
    assert done.stdout.endswith(
        "tinyinfer plugins doctor: no problems found (1 group, 0 plugin entry points).\n"
    )


def test_plugins_show_names_the_built_in() -> None:
    done = tinyinfer("plugins", "show", "TOP_K")
    assert done.returncode == 0, done.stderr
    assert "  default:       tinyinfer.TopKSampler (built-in)\n" in done.stdout


def test_a_usage_error_points_at_tinyinfers_help() -> None:
    done = tinyinfer("plugins", "lsit")
    assert done.returncode == 2
    assert done.stderr.endswith("Try 'tinyinfer plugins --help' for help.\n")
