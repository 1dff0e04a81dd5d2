"""``attn select [REGISTRY] [--set KEY=VALUE ...] [--backend NAME] [--json]``: choose, say why."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ._common import (
    EXIT_OK,
    EXIT_PROBLEM,
    REGISTRY_HELP,
    SUMMARIES,
    UsageError,
    add_registry_option,
    plugin_output_to,
    selected_registries,
    version_label,
)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import IO

    from attn.registry.selection import Candidate


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``attn select`` and its arguments."""
    parser = sub.add_parser(
        "select",
        help=SUMMARIES["select"],
        description="Try the registry's candidates in order for the settings given and print "
        "each verdict with its reasons; the first valid one is chosen.",
    )
    parser.add_argument(
        "registry",
        nargs="?",
        metavar="REGISTRY",
        help=f"{REGISTRY_HELP} (may be left out when the command knows one registry only)",
    )
    add_registry_option(parser)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="settings",
        help="a setting (repeatable); VALUE is read as JSON when it is JSON "
        "(head_size=128, capability=[9,0], use_mla=true), else as a string (device=cuda)",
    )
    parser.add_argument("--backend", metavar="NAME", help="try this backend alone")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def parse_settings(pairs: Sequence[str], prog: str) -> dict[str, object]:
    """``KEY=VALUE`` pairs as settings; a later KEY wins.

    Raises:
        UsageError: a pair has no ``=``, its KEY is not an identifier, or its
            VALUE is JSON nested more than `MAX_DEPTH` deep.
    """
    settings: dict[str, object] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals or not key.isidentifier():
            msg = f"--set expects KEY=VALUE with KEY an identifier, got {pair!r}"
            raise UsageError(msg, prog)
        try:
            value = json.loads(text)
        except RecursionError:  # JSON, nested too deeply for the parser
            value = _TOO_DEEP
        except ValueError:
            value = text
        if value is _TOO_DEEP or _depth(value) > MAX_DEPTH:
            msg = f"--set {key}: the value is JSON nested more than {MAX_DEPTH} deep"
            raise UsageError(msg, prog)
        settings[key] = value
    return settings


#: How many lists and objects a ``--set`` value may nest (``capability=[9,0]`` nests 1).
MAX_DEPTH = 100
_TOO_DEEP = object()


def _depth(value: object) -> int:
    """How many lists and objects *value* (parsed JSON) nests (``[]`` is 1), without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending and deepest <= MAX_DEPTH:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in children)
    return deepest


def _row(row: Candidate) -> dict[str, object]:
    return {
        "name": row.name,
        "origin": row.origin,
        "distribution": row.distribution,
        "distribution_version": row.version,
        "path": row.path,
        "verdict": row.verdict,
        "fallback": row.fallback,
        "reasons": [{"code": r.code, "message": r.message} for r in row.reasons],
    }


def run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Choose the backend of the registry *args* names; 0 when one is chosen, 1 when none is."""
    from attn.registry.errors import SelectionError  # noqa: PLC0415
    from attn.registry.selection import Candidate  # noqa: PLC0415
    from attn.registry.selection import select as choose  # noqa: PLC0415

    settings = parse_settings(args.settings, args.prog)
    registries = selected_registries(args, [*filter(None, [args.registry]), *args.selected])
    if len(registries) != 1:
        names = ", ".join(f"{r.__name__} ({r.group})" for r in registries)
        raise UsageError(f"select needs one registry; name one of: {names}", args.prog)
    (registry,) = registries
    try:
        with plugin_output_to(err):
            selection = choose(registry, args.backend, **settings)
    except SelectionError as exc:
        rows = tuple(row for row in exc.tried if isinstance(row, Candidate))
        chosen, explicit, tried, text = None, exc.explicit, rows, str(exc)
    else:
        chosen, explicit, tried = selection.name, selection.explicit, selection.tried
        text = str(selection)
    if args.json:
        payload = {
            "attn_version": version_label(),
            "registry": registry.__name__,
            "settings": settings,
            "explicit": explicit,
            "chosen": chosen,
            "tried": [_row(row) for row in tried],
        }
        out.write(json.dumps(payload, indent=2, default=str) + "\n")
    else:
        out.write(f"{text}\n")
    return EXIT_OK if chosen is not None else EXIT_PROBLEM
