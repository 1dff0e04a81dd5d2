"""``attn state save FILE``: what this environment resolves every backend to, as JSON.

The file is what ``attn doctor --against FILE`` compares another environment
with (a worker node before workers start on it). It holds the same data as
`attn.capture_state()` (``WorkerState.to_json()``) and is read back with
``WorkerState.from_json``, validated: nothing in it is executed or unpickled.
"""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING

from attn.registry.loading import plugin_output_to
from attn.registry.workers import WorkerState, _capture

from ._common import (
    EXIT_OK,
    SUMMARIES,
    UsageError,
    add_registry_option,
    plural,
    selected_registries,
    version_label,
)

if TYPE_CHECKING:
    import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``attn state save FILE``."""
    parser = sub.add_parser(
        "state",
        help=SUMMARIES["state"],
        description="Save the resolved backends of this environment (every name: origin, "
        "path, distribution and version) as JSON, to compare another node with it using "
        "'attn doctor --against FILE'.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    save = actions.add_parser(
        "save",
        help="write the state to FILE ('-' for stdout)",
        description="Write this environment's resolved backends to FILE as JSON ('-' for stdout).",
    )
    save.add_argument("file", metavar="FILE", help="where to write the state ('-': stdout)")
    add_registry_option(save)


def run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Write the state of the registries *args* name to the file (or stdout); say so on stderr."""
    registries = selected_registries(args, args.selected)
    with plugin_output_to(err):
        state = WorkerState(tuple(_capture(r) for r in registries))
    text = json.dumps({"attn_version": version_label(), **state.to_json()}, indent=2) + "\n"
    if args.file == "-":
        out.write(text)
        return EXIT_OK
    try:
        with open(args.file, "w", encoding="utf-8") as handle:  # noqa: PTH123 - os-level path
            handle.write(text)
    except OSError as exc:
        msg = f"cannot write {args.file}: {exc.strerror or exc}"
        raise UsageError(msg, args.prog) from exc
    backends = sum(len(r.backends) for r in state.registries)
    err.write(
        f"Saved {plural(backends, 'backend')} of {registries_label(len(state.registries))} "
        f"to {args.file}; check another environment with "
        f"'{args.root} doctor --against {args.file}'.\n"
    )
    return EXIT_OK


def registries_label(count: int) -> str:
    """``1 registry``, ``2 registries``."""
    return f"{count} {'registry' if count == 1 else 'registries'}"


#: The most a saved state can hold: a hundred times the state of a host with
#: a thousand backends. Reading stops there (``--against /dev/zero`` ends).
MAX_STATE_CHARS = 64 * 1024 * 1024


def load(path: str, prog: str) -> WorkerState:
    """Read and validate a state saved by ``attn state save`` (``-``: stdin).

    Raises:
        UsageError: the file cannot be read, is not JSON, or is not a saved state.
    """
    name = "stdin" if path == "-" else path
    try:
        if path == "-":
            if sys.stdin is None:  # `attn doctor --against - <&-`
                msg = f"cannot read {name}: stdin is closed"
                raise UsageError(msg, prog)
            text = sys.stdin.read(MAX_STATE_CHARS + 1)
        else:
            with open(path, encoding="utf-8") as handle:  # noqa: PTH123 - os-level path
                text = handle.read(MAX_STATE_CHARS + 1)
    except OSError as exc:
        msg = f"cannot read {name}: {exc.strerror or exc}"
        raise UsageError(msg, prog) from exc
    except UnicodeDecodeError as exc:
        msg = f"{name} is not a saved attn state: not UTF-8 text ({exc.reason})"
        raise UsageError(msg, prog) from exc
    if len(text) > MAX_STATE_CHARS:  # /dev/zero, or a file that is no state
        msg = f"{name} is not a saved attn state: longer than {MAX_STATE_CHARS:,} characters"
        raise UsageError(msg, prog)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        msg = f"{name} is not a saved attn state: not JSON ({exc})"
        raise UsageError(msg, prog) from exc
    try:
        return WorkerState.from_json(data)
    except ValueError as exc:
        msg = f"{name} is {exc}; write it with 'attn state save FILE'"
        raise UsageError(msg, prog) from exc
