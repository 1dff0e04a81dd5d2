"""The ``tinyinfer`` command: ``tinyinfer plugins list|show|doctor|select|state``."""

import sys

import attn.cli
from tinyinfer import SamplerEnum


def main() -> int:
    """Run ``tinyinfer plugins ...`` with attn's commands, over tinyinfer's registries."""
    if sys.argv[1:2] == ["plugins"]:
        return attn.cli.main(sys.argv[2:], registries=[SamplerEnum], prog="tinyinfer plugins")
    sys.stderr.write("usage: tinyinfer plugins COMMAND ...\n")
    return 2
